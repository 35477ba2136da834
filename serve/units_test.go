package serve

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "512MiB": 512 << 20, "512 MiB": 512 << 20, "8GB": 8e9,
		"1.5GiB": 3 << 29, "64k": 64 << 10, "2TiB": 2 << 40, "10B": 10,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "12XB", "MiB", "1e999", "1.2.3"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q): no error", in)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"web", "a", "roads-2024.v1", "team:graph_1", "grafo-ñ"} {
		if err := checkName(ok); err != nil {
			t.Errorf("checkName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", "a/b", "a b", "x\n", strings.Repeat("a", 129)} {
		if err := checkName(bad); err == nil {
			t.Errorf("checkName(%q): no error", bad)
		}
	}
	for name, want := range map[string]string{"-bad name": `starts with '-'`, "a b": `has the character ' '`} {
		if err := checkName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkName(%q): %v, want it to say %s", name, err, want)
		}
	}
}

// TestPanicIsInternal checks that a handler's panic becomes an Internal
// status and a log line, not a crash.
func TestPanicIsInternal(t *testing.T) {
	logs := &syncBuffer{}
	s := &service{log: slog.New(slog.NewTextHandler(logs, nil))}
	err := s.finish(context.Background(), "/arrow.flight.protocol.FlightService/DoGet", &callLog{}, time.Now(), "boom", nil)
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "boom") {
		t.Errorf("finish after a panic: %v", err)
	}
	if !strings.Contains(logs.String(), "panic in a call") || !strings.Contains(logs.String(), "status=Internal") {
		t.Errorf("log: %s", logs.String())
	}
}
