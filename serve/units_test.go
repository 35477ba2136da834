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

// TestCheckName checks the graph name rule of docs/serve.md: 1 to 128
// ASCII letters, digits and . _ - :, starting with a letter or digit.
// Letters and digits of other scripts, spaces and control characters are
// refused, saying the rule.
func TestCheckName(t *testing.T) {
	for _, ok := range []string{"web", "a", "7", "roads-2024.v1", "team:graph_1", "Z.", strings.Repeat("a", 128)} {
		if err := checkName(ok); err != nil {
			t.Errorf("checkName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "-x", ".x", "_x", ":x", "a/b", "a b", " a", "x\n", "a\x00b", "a\tb", "a\x7fb",
		strings.Repeat("a", 129),
		"oké", "grafo-ñ", "é", "ключ", "图", // letters of other scripts
		"٣", "a٣", "१२", "５", // digits of other scripts: Arabic-Indic, Devanagari, fullwidth
		"a\u00a0b", "a\u2028b", "\xff", "\ufffd", // a no-break space, a line separator, a byte that is not UTF-8, U+FFFD
	} {
		err := checkName(bad)
		if err == nil {
			t.Errorf("checkName(%q): no error", bad)
			continue
		}
		if bad != "" && !strings.Contains(err.Error(), "ASCII letters, digits and . _ - :") {
			t.Errorf("checkName(%q): %v, want it to say the rule", bad, err)
		}
	}
	for name, want := range map[string]string{
		"-bad name": `starts with '-'`,
		"a b":       `has the character ' '`,
		"oké":       `has the character 'é'`,
		"x\x00":     `has the character '\x00'`,
		"a\xffb":    `has the byte 0xff, which is not UTF-8`,
		"a\ufffd":   `has the character '�'`,
	} {
		if err := checkName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkName(%q): %v, want it to say %s", name, err, want)
		}
	}
}

// TestPanicIsInternal checks that a handler's panic becomes an Internal
// status and a log line, not a crash; the panic's text is logged, not sent.
func TestPanicIsInternal(t *testing.T) {
	logs := &syncBuffer{}
	s := &service{log: slog.New(slog.NewTextHandler(logs, nil))}
	err := s.finish(context.Background(), "/arrow.flight.protocol.FlightService/DoGet", &callLog{}, time.Now(), "boom", nil)
	if status.Code(err) != codes.Internal || strings.Contains(err.Error(), "boom") {
		t.Errorf("finish after a panic: %v, want Internal without the panic's text", err)
	}
	if !strings.Contains(logs.String(), "panic in a call") || !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), "status=Internal") {
		t.Errorf("log: %s", logs.String())
	}
}
