package main_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveUntilListening starts `gpipe serve` with args on a free loopback
// port, waits until it says it is serving, stops it with SIGTERM, and
// returns its exit code and what it wrote on stderr (its log).
func serveUntilListening(t *testing.T, args ...string) (int, string) {
	t.Helper()
	runs.Add(1)
	argv := append([]string{"serve", "--addr", "127.0.0.1:0", "--backend", "cpu"}, args...)
	cmd := exec.Command(gpipeBin, argv...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "serving Arrow Flight") {
		select {
		case err := <-exited:
			return exitCode(t, err), stderr.String()
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("gpipe serve did not start: %s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	return exitCode(t, <-exited), stderr.String()
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatal(err)
	}
	return ee.ExitCode()
}

// TestShortTokenWarns checks that a bearer token under 16 bytes starts the
// server with a warning in its log (on stderr, text or JSON) that says how
// to make a good one, and a long token without.
func TestShortTokenWarns(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	long := filepath.Join(dir, "long")
	writeFile(t, short, []byte("abcde\n"))
	writeFile(t, long, []byte(strings.Repeat("0123456789abcdef", 4)+"\n"))
	for _, format := range [][]string{nil, {"--log-json"}} {
		code, logs := serveUntilListening(t, append([]string{"--token-file", short}, format...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, logs)
		}
		for _, want := range []string{"WARN", "5 bytes", "16 bytes", "openssl rand -hex 32"} {
			if !strings.Contains(logs, want) {
				t.Errorf("%v: the log lacks %q:\n%s", format, want, logs)
			}
		}
		if strings.Contains(logs, "abcde") {
			t.Errorf("the log shows the token:\n%s", logs)
		}
	}
	code, logs := serveUntilListening(t, "--token-file", long)
	if code != 0 || strings.Contains(logs, "WARN") {
		t.Errorf("a 64-byte token: exit %d, log:\n%s", code, logs)
	}
}

// TestServeIdleTimeoutFlags checks the idle timeout flags: taken (0 for no
// limit), shown in the start line, and refused when negative.
func TestServeIdleTimeoutFlags(t *testing.T) {
	code, logs := serveUntilListening(t, "--upload-idle-timeout", "90s", "--result-idle-timeout", "0")
	if code != 0 || !strings.Contains(logs, "upload_idle_timeout=1m30s result_idle_timeout=0s") {
		t.Errorf("exit %d, log:\n%s", code, logs)
	}
	code, logs = serveUntilListening(t)
	if code != 0 || !strings.Contains(logs, "upload_idle_timeout=2m0s result_idle_timeout=2m0s") {
		t.Errorf("the defaults: exit %d, log:\n%s", code, logs)
	}
	for _, flag := range []string{"--upload-idle-timeout", "--result-idle-timeout"} {
		fails(t, t.TempDir(), nil, 2, []string{flag, "must not be negative"}, "serve", flag, "-5s")
	}
}

// TestServeDebugAddr checks --debug-addr: the profiles' address in the
// log, a warning when it listens beyond loopback, and an address it cannot
// listen on refused with exit 2.
func TestServeDebugAddr(t *testing.T) {
	code, logs := serveUntilListening(t, "--debug-addr", "127.0.0.1:0")
	if code != 0 || !strings.Contains(logs, `msg="serving profiles" debug_addr=http://127.0.0.1:`) || strings.Contains(logs, "WARN") {
		t.Errorf("loopback: exit %d, log:\n%s", code, logs)
	}
	code, logs = serveUntilListening(t, "--debug-addr", "0.0.0.0:0")
	if code != 0 || !strings.Contains(logs, "--debug-addr listens beyond loopback") {
		t.Errorf("every interface: exit %d, log:\n%s", code, logs)
	}
	fails(t, t.TempDir(), nil, 2, []string{"cannot listen on 127.0.0.1:99999 for --debug-addr"}, "serve", "--debug-addr", "127.0.0.1:99999")
}

// TestServeLimitFlags checks the limits: on by default (the memory ones
// from the machine's memory) and shown in the log's limits line, turned off
// by 0, and refused when negative.
func TestServeLimitFlags(t *testing.T) {
	code, logs := serveUntilListening(t)
	if code != 0 || !strings.Contains(logs, "msg=limits max_memory_bytes=") || strings.Contains(logs, "=none") {
		t.Errorf("the defaults: exit %d, log:\n%s", code, logs)
	}
	for _, want := range []string{"max_graphs=64", "max_query_time=10m0s", "max_iterations=10000", "max_upload_time=30m0s", "go_memory_limit="} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	code, logs = serveUntilListening(t, "--max-memory-bytes", "0", "--max-upload-bytes", "0", "--max-graphs", "0",
		"--max-query-time", "0", "--max-iterations", "0", "--max-upload-time", "0")
	if code != 0 || !strings.Contains(logs, "max_memory_bytes=none max_upload_bytes=none") ||
		!strings.Contains(logs, "max_graphs=none max_concurrent_jobs=4 max_query_time=none max_iterations=none max_upload_time=none go_memory_limit=none") {
		t.Errorf("no limits: exit %d, log:\n%s", code, logs)
	}
	code, logs = serveUntilListening(t, "--max-memory-bytes", "2GiB")
	if code != 0 || !strings.Contains(logs, `max_memory_bytes="2 GiB" max_upload_bytes="512 MiB"`) || !strings.Contains(logs, `go_memory_limit="2.5 GiB"`) {
		t.Errorf("--max-memory-bytes 2GiB: exit %d, log:\n%s", code, logs)
	}
	for _, flag := range []string{"--max-query-time", "--max-upload-time"} {
		fails(t, t.TempDir(), nil, 2, []string{flag, "must not be negative"}, "serve", flag, "-5s")
	}
	fails(t, t.TempDir(), nil, 2, []string{"--max-iterations must be >= 0"}, "serve", "--max-iterations", "-1")
}

// TestServeLogJSONSeconds checks that the JSON log gives durations as
// seconds, numbers under keys ending in _s (slog's default is nanoseconds,
// which log tools read as plain integers), and limits that are off as
// "none"; the text log keeps Go's durations.
func TestServeLogJSONSeconds(t *testing.T) {
	code, logs := serveUntilListening(t, "--log-json", "--upload-idle-timeout", "90s", "--max-upload-time", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, logs)
	}
	seen := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line that is not JSON: %q", line)
		}
		for k, v := range rec {
			seen[k] = v
		}
	}
	for key, want := range map[string]any{
		"upload_idle_timeout_s": 90.0, "result_idle_timeout_s": 120.0, "max_query_time_s": 600.0,
		"max_upload_time": "none", "timeout_s": 30.0,
	} {
		if got, ok := seen[key]; !ok || got != want {
			t.Errorf("%s: %v (%T), want %v; log:\n%s", key, got, got, want, logs)
		}
	}
	for _, key := range []string{"upload_idle_timeout", "timeout", "max_query_time"} {
		if _, ok := seen[key]; ok {
			t.Errorf("the JSON log has %s as well as %s_s", key, key)
		}
	}
}
