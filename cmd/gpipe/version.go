package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gpipe/gpipe/gpu"
)

// versionText is what --version prints: the version this binary was built
// as (a release's tag, or the commit with "modified" where the tree had
// changes), its Go toolchain and platform, then the CUDA driver, asked for
// only here (loading it takes a moment where there is one, and nothing
// where there is none). buildVersion is the version the build set with
// -ldflags, "dev" where it set none.
func versionText(buildVersion string) string {
	var b strings.Builder
	b.WriteString("gpipe version " + moduleVersion(buildVersion))
	if vcs := vcsInfo(); vcs != "" {
		b.WriteString(" (" + vcs + ")")
	}
	fmt.Fprintf(&b, ", %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	b.WriteString(cudaLine() + "\n")
	return b.String()
}

// moduleVersion is the build's version: -ldflags' where it set one, else
// the module's as the go command stamped it (a tag for `go install
// ...@v1.2.0`, a pseudo-version from the repository's commit), else "dev".
func moduleVersion(buildVersion string) string {
	if buildVersion != "dev" && buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// vcsInfo is the commit the binary was built from, its time and whether
// the working tree had changes ("commit 57a3155c1234, 2026-01-02T03:04:05Z,
// modified"), as the go command records them in the binary; "" where it
// recorded none (a build outside a repository, or -buildvcs=false).
func vcsInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	parts := []string{"commit " + rev[:min(len(rev), 12)]}
	if at != "" {
		parts = append(parts, at)
	}
	if modified {
		parts = append(parts, "modified")
	}
	return strings.Join(parts, ", ")
}

// cudaLine says which CUDA driver gpipe finds, and its GPUs, or why none.
func cudaLine() string {
	info, err := gpu.Available()
	if err != nil {
		return "CUDA: no usable GPU (" + oneLine(err.Error()) + ")"
	}
	return fmt.Sprintf("CUDA: driver for CUDA %s, %s", info.DriverVersionString(), count(len(info.Devices), "GPU", "GPUs"))
}
