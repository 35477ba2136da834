package vprog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/internal/optest"
)

// bfsLike is a valid program the error cases change a line of.
const bfsLike = `program t
const INF uint32 = 4294967295
vertex level uint32 = is_source ? 0 : INF output
init_compute { local.level = old.level }
compute {
    if src.level != INF { atomicMin(local.level, src.level + 1) }
}
update_condition { return local.level < old.level }
`

// TestBadPrograms checks that each bad program is an Input error naming
// the file, the line and the column, and saying what is wrong.
func TestBadPrograms(t *testing.T) {
	cases := []struct {
		name, text string
		line, col  int
		want       string
	}{
		{"syntax", "program t\nvertex x uint32 = 0\ncompute { atomicMin(local.x, ) }\nupdate_condition { return false }", 3, 30, "expected an expression"},
		{"unknown char", "program t\nvertex x uint32 = 0 @", 2, 21, "unexpected character"},
		{"unclosed block", "program t\nvertex x uint32 = 0\ncompute {\n", 3, 9, "no closing }"},
		{"type mismatch", strings.Replace(bfsLike, "src.level + 1", "src.level + 1.5", 1), 6, 62, "not an integer"},
		{"mixed types", "program t\nvertex x uint32 = 0\nvertex y float32 = 0\ncompute { atomicMin(local.x, src.x + src.y) }\nupdate_condition { return false }", 4, 36, "mismatched types uint32 and float32"},
		{"write to static", "program t\nvertex x uint32 = 0\nstatic s uint32 = 1\ninit_compute { src_static.s = 2 }\ncompute {}\nupdate_condition { return false }", 4, 16, "src_static.s is read-only"},
		{"write to old", strings.Replace(bfsLike, "local.level = old.level", "old.level = 1", 1), 4, 16, "read-only"},
		{"assign in compute", strings.Replace(bfsLike, "atomicMin(local.level, src.level + 1)", "local.level = 1", 1), 6, 27, "may not assign local.level"},
		{"read reduced field", strings.Replace(bfsLike, "src.level + 1)", "local.level + 1)", 1), 6, 50, "reduces with atomicMin"},
		{"two reductions", strings.Replace(bfsLike, "atomicMin(local.level, src.level + 1)", "atomicMin(local.level, 1)\natomicAdd(local.level, 1)", 1), 7, 1, "both atomicMin and atomicAdd"},
		{"atomic outside compute", strings.Replace(bfsLike, "local.level = old.level", "atomicMin(local.level, 1)", 1), 4, 16, "is for compute"},
		{"no return", strings.Replace(bfsLike, "return local.level < old.level", "local.level = 1", 1), 8, 1, "may end without returning"},
		{"return not bool", strings.Replace(bfsLike, "return local.level < old.level", "return local.level", 1), 8, 27, "returns a bool"},
		{"unknown field", strings.Replace(bfsLike, "src.level != INF", "src.lvl != INF", 1), 6, 8, "src has no field lvl"},
		{"unknown function", strings.Replace(bfsLike, "src.level + 1", "pow(src.level, 2)", 1), 6, 50, "unknown function pow"},
		{"loop", strings.Replace(bfsLike, "if src.level", "for src.level", 1), 6, 5, "no loops"},
		{"constant division by zero", strings.Replace(bfsLike, "src.level + 1", "src.level / 0", 1), 6, 60, "division by zero"},
		{"overflow", strings.Replace(bfsLike, "4294967295", "4294967296", 1), 2, 20, "overflows uint32"},
		{"tolerance undeclared", strings.Replace(bfsLike, "local.level < old.level", "1.0 < TOLERANCE", 1), 8, 33, "declares no tolerance"},
		{"is_source in a function", strings.Replace(bfsLike, "src.level != INF", "is_source", 1), 6, 8, "is for initial values"},
		{"column outside an edge", strings.Replace(bfsLike, "is_source ? 0 : INF", "uint32(column())", 1), 3, 30, "is an edge field's initial value"},
		{"two columns", "program t\nvertex x float64 = 0\nedge a float64 = column(\"a\")\nedge b float64 = column(\"b\")\ncompute {}\nupdate_condition { return false }", 4, 18, "a second edge column"},
		{"bad type", "program t\nvertex x uint8 = 0", 2, 10, "unknown type \"uint8\""},
		{"duplicate field", "program t\nvertex x uint32 = 0\nvertex x uint32 = 0", 3, 8, "a second vertex field x"},
		{"key of floats", "program t\nvertex x float32 = 0 output key", 2, 22, "must be a uint32 field"},
		{"unreachable", strings.Replace(bfsLike, "return local.level < old.level", "return true\nlocal.level = 1", 1), 9, 13, "unreachable"},
	}
	for _, c := range cases {
		_, err := Parse("bad.vp", c.text)
		checkPlace(t, c.name, err, c.line, c.col, c.want)
	}
}

// checkPlace checks that err is an Input error of bad.vp at line:col that
// says want.
func checkPlace(t *testing.T, name string, err error, line, col int, want string) {
	t.Helper()
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Errorf("%s: %v, want a usererr", name, err)
		return
	}
	prefix := "bad.vp, line " + itoa(line) + ": column " + itoa(col) + ": "
	if ue.Kind != usererr.Input || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %q (kind %v), want an input error starting %q and saying %q", name, err, ue.Kind, prefix, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestHugePrograms checks the size bounds: text, tokens, nesting, fields.
func TestHugePrograms(t *testing.T) {
	cases := map[string]string{
		"bytes":  strings.Repeat("# a comment line\n", MaxBytes/16),
		"tokens": "program t\nconst A = " + strings.Repeat("1 + ", MaxTokens) + "1",
		"nodes":  "program t\nconst A = " + strings.Repeat("1 + ", MaxNodes/2+10) + "1",
		"depth":  "program t\nconst A = " + strings.Repeat("(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1),
		"fields": "program t\n" + strings.Repeat("vertex x uint32 = 0\n", 1) + fieldLines(MaxFields+1),
	}
	wants := map[string]string{"bytes": "bytes (at most", "tokens": "more than 8192 tokens", "nodes": "more than 4096 expressions",
		"depth": "nested more than 32 deep", "fields": "more than 16 vertex fields"}
	for name, text := range cases {
		_, err := Parse("big.vp", text)
		if err == nil || usererr.KindOf(err) != usererr.Input || !strings.Contains(err.Error(), wants[name]) || !strings.HasPrefix(err.Error(), "big.vp") {
			t.Errorf("%s: %v, want an input error of big.vp saying %q", name, err, wants[name])
		}
	}
}

func fieldLines(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("vertex f" + itoa(i) + " uint32 = 0\n")
	}
	return b.String()
}

// TestRunTimeFaults checks that a division by zero or a NaN while the
// program runs stops it with an error naming the line and the vertex.
func TestRunTimeFaults(t *testing.T) {
	g := optest.BuildGraph(t, optest.Shapes(t)[2], true, true, edges.KeyInt64) // parallel-edges
	cases := []struct {
		name, text string
		line, col  int
		want       string
	}{
		{"integer division", strings.Replace(bfsLike, "src.level + 1)", "src.level / (src.level - src.level))", 1), 6, 60, "division by zero at vertex"},
		{"float division", "program t\nvertex x float64 = 1 output\ncompute { atomicAdd(local.x, src.x / (src.x - 1)) }\nupdate_condition { return false }", 3, 36, "division by zero at vertex"},
		{"NaN", "program t\nvertex x float64 = -1 output\ninit_compute {\n  local.x = sqrt(old.x)\n}\ncompute {}\nupdate_condition { return false }", 4, 13, "NaN at vertex"},
		{"infinities", "program t\nvertex x float64 = inf output\nupdate_condition {\n  y := old.x - old.x\n  return y > 0\n}\ncompute {}", 4, 14, "NaN at vertex"},
	}
	for _, c := range cases {
		p, err := Parse("bad.vp", c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = RunCPU(context.Background(), p, Input{Graph: g, Source: 0})
		checkPlace(t, c.name, err, c.line, c.col, c.want)
	}
}
