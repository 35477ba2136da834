package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make build stamps the binary with git describe of the tree (it said
// "dev" for every build from a checkout without -buildvcs), or with
// VERSION: gpipe --version prints it. scripts/gpu-bundle.sh stamps its
// gpipe the same way.
func TestMakefileStampsVersion(t *testing.T) {
	t.Parallel()
	makeCmd, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	described, err := exec.Command(filepath.Join(root, "scripts", "version.sh")).Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(described)); v == "" || v == "dev" && gitTree(root) {
		t.Fatalf("scripts/version.sh printed %q in a git tree", v)
	}
	dry, err := exec.Command(makeCmd, "-n", "-C", root, "build").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := `-ldflags "-X main.version=` + strings.TrimSpace(string(described)) + `"`; !strings.Contains(string(dry), want) {
		t.Errorf("make -n build: %q lacks %q", dry, want)
	}

	// A real build with VERSION given: the binary says it.
	bin := filepath.Join(t.TempDir(), "gpipe")
	build := exec.Command(makeCmd, "-C", root, "build", "VERSION=v9.8.7-test", "BIN="+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "gpipe version v9.8.7-test") {
		t.Errorf("--version of a build with VERSION=v9.8.7-test: %q", out)
	}

	script, err := os.ReadFile(filepath.Join(root, "scripts", "gpu-bundle.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "-X main.version=$version") || !strings.Contains(string(script), "scripts/version.sh") {
		t.Error("scripts/gpu-bundle.sh does not stamp its gpipe with the version")
	}
}

// gitTree says whether dir is in a git working tree.
func gitTree(dir string) bool {
	err := exec.Command("git", "-C", dir, "rev-parse", "--is-inside-work-tree").Run()
	return err == nil
}
