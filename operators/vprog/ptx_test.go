package vprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ptxas finds an assembler to check the generated PTX with: GPIPE_PTXAS,
// else ptxas on the PATH; none skips the assembly (the generation still
// runs).
func ptxas() string {
	if p := os.Getenv("GPIPE_PTXAS"); p != "" {
		return p
	}
	p, _ := exec.LookPath("ptxas")
	return p
}

func programsForPTX(t *testing.T) map[string]*Program {
	t.Helper()
	progs := map[string]*Program{}
	for _, name := range []string{"bfs", "sssp", "pr", "cc", "sswp", "nn", "hs", "cs"} {
		progs[name] = example(t, name)
	}
	progs["sink"] = parseFile(t, filepath.Join("testdata", "sink.vp"))
	return progs
}

// parseFile reads and parses the program at path.
func parseFile(t testing.TB, path string) *Program {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(path, string(text))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPTXAssembles generates every strategy's kernels for the eight
// examples and the sink program, checks that each names the kernels its
// strategy launches, and assembles them for sm_80 where ptxas is found.
func TestPTXAssembles(t *testing.T) {
	as := ptxas()
	kernels := map[string][]string{
		"vwc":     {KernelCompute, KernelCheck, KernelCommit},
		"warpseg": {KernelInit, KernelEdges, KernelUpdate, KernelCheck, KernelCommit},
		"kites":   {KernelCount, KernelScan, KernelFill, KernelInit, KernelEdges, KernelUpdate, KernelCheck, KernelCommit},
		"gshards": {KernelShard, KernelCheck, KernelCommit},
	}
	dir := t.TempDir()
	for name, p := range programsForPTX(t) {
		for _, s := range Strategies() {
			m, err := p.GenerateFor(s, 8)
			if err != nil {
				t.Fatalf("%s %s: %v", name, s, err)
			}
			for _, k := range kernels[s] {
				if !strings.Contains(m.PTX, ".entry "+k+"(") {
					t.Errorf("%s %s: no kernel %s", name, s, k)
				}
			}
			if as == "" {
				continue
			}
			file := filepath.Join(dir, name+"-"+s+".ptx")
			if err := os.WriteFile(file, []byte(m.PTX), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(as, "-arch=sm_80", "-o", file+".cubin", file).CombinedOutput()
			if err != nil {
				t.Errorf("%s %s: ptxas: %v\n%s", name, s, err, out)
			}
		}
	}
	if _, err := (&Program{}).GenerateFor("cw", 1); err == nil {
		t.Error("cw generated: it is gshards without the source copies (ptx_shards.go)")
	}
	if as == "" {
		t.Skip("no ptxas (GPIPE_PTXAS or PATH): the PTX was generated, not assembled")
	}
}
