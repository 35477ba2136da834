package usererr

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestSentinels checks that errors.Is matches an Error of a kind with that
// kind's sentinel only, through wrapping, and that a cause stays reachable.
func TestSentinels(t *testing.T) {
	sentinels := map[Kind]error{Usage: ErrUsage, Input: ErrInput, NotFound: ErrNotFound, Backend: ErrBackend, Limit: ErrLimit}
	for kind := range sentinels {
		err := fmt.Errorf("wrapped: %w", New(kind, "problem", "fix"))
		for other, s := range sentinels {
			if got := errors.Is(err, s); got != (other == kind) {
				t.Errorf("errors.Is(%v error, %v sentinel) = %v", kind, other, got)
			}
		}
	}
	if errors.Is(New(Internal, "p", ""), ErrInput) {
		t.Error("an Internal error matches ErrInput")
	}
	missing := InFile("edges.parquet", "cannot open: no such file", "check the path").Because(fs.ErrNotExist)
	if !errors.Is(missing, fs.ErrNotExist) || !errors.Is(missing, ErrInput) {
		t.Errorf("a missing file's error: errors.Is(fs.ErrNotExist) %v, errors.Is(ErrInput) %v",
			errors.Is(missing, fs.ErrNotExist), errors.Is(missing, ErrInput))
	}
}

// TestExitCodes checks each kind's exit code, as README's table gives them.
func TestExitCodes(t *testing.T) {
	want := map[Kind]int{Internal: 1, Usage: 2, Input: 3, NotFound: 3, Backend: 4, Limit: 5}
	for k, code := range want {
		if got := k.ExitCode(); got != code {
			t.Errorf("%v: exit code %d, want %d", k, got, code)
		}
	}
}
