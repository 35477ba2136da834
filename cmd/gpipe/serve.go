package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/serve"
)

func serveCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "serve Arrow Flight clients: upload edge tables, query graphs, exchange edges for results",
		UsageText: "gpipe serve [--addr HOST:PORT] [--tls-cert FILE --tls-key FILE] [--token-file FILE] [limits]",
		Description: "Flight calls:\n" +
			"   DoPut       descriptor path [GRAPH] (or command {\"graph\": GRAPH, \"src\": ..., \"undirected\": true, ...}):\n" +
			"               upload edges; the PutResult metadata describes the built graph as JSON\n" +
			"   DoGet       ticket {\"graph\": GRAPH, \"op\": OPERATOR, \"source\": KEY, ...parameters}: the result,\n" +
			"               the columns of 'gpipe run', in batches of at most --batch-rows rows\n" +
			"   DoExchange  command {\"op\": OPERATOR, ...upload options and parameters}: edges in, result out\n" +
			"   ListFlights, GetFlightInfo  the graphs held; DoAction \"drop\" frees one\n\n" +
			"Authentication: with --token-file, every call needs the header \"authorization: Bearer TOKEN\".\n" +
			"Every limit is on by default (0 turns one off); the log's second line shows them. Byte limits take units:\n" +
			"512MiB, 8GB, 1TiB. SIGINT or SIGTERM stops the server: running calls get\n" +
			"--shutdown-timeout to finish (a second signal: none), then are canceled; the exit status is 0.\n" +
			"See docs/serve.md for the protocol, its JSON and its status codes.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8815", Usage: "listen on `HOST:PORT` (loopback by default; 0.0.0.0:8815 for every interface)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate `FILE` (PEM); with --tls-key"},
			&cli.StringFlag{Name: "tls-key", Usage: "TLS private key `FILE` (PEM); with --tls-cert"},
			&cli.StringFlag{Name: "token-file", Usage: "`FILE` holding the bearer token every call must send (surrounding whitespace ignored)"},
			&cli.StringFlag{Name: "max-memory-bytes", DefaultText: "half the memory of the machine or container",
				Usage: "`BYTES` all stored graphs and uploads under way (their tables, and --max-message-bytes + 16MiB each for messages in flight) may hold together (0: no limit)"},
			&cli.StringFlag{Name: "max-upload-bytes", DefaultText: "a quarter of --max-memory-bytes",
				Usage: "`BYTES` one upload's edge table may hold in memory (0: no limit)"},
			&cli.IntFlag{Name: "max-graphs", Value: serve.DefaultMaxGraphs, Usage: "most graphs held at once, uploads under way included (0: no limit)"},
			&cli.IntFlag{Name: "max-concurrent-jobs", Value: serve.DefaultConcurrentJobs, Usage: "most graph builds and operator runs at once; others wait (jobs on graphs of at most 262,144 edges have as many slots again)"},
			&cli.DurationFlag{Name: "max-query-time", Value: serve.DefaultMaxQueryTime, Usage: "stop a query whose computation runs longer, with DeadlineExceeded (0: never)"},
			&cli.IntFlag{Name: "max-iterations", Value: serve.DefaultMaxIterations, Usage: "most iterations a query may ask for (pagerank's max_iterations; 0: no limit)"},
			&cli.DurationFlag{Name: "max-upload-time", Value: serve.DefaultMaxUploadTime, Usage: "abandon an upload not ended this long after it began, freeing its memory and graph slot (0: never)"},
			&cli.StringFlag{Name: "max-message-bytes", Value: "64MiB", Usage: "largest record batch message accepted, in `BYTES`"},
			&cli.IntFlag{Name: "batch-rows", Value: serve.DefaultBatchRows, Usage: "most rows in a result batch"},
			&cli.StringFlag{Name: "backend", Value: "auto", Usage: "auto, cpu or gpu"},
			&cli.DurationFlag{Name: "upload-idle-timeout", Value: serve.DefaultIdleTimeout, Usage: "abandon an upload whose client sends nothing for this long, freeing its memory and graph slot (0: never)"},
			&cli.DurationFlag{Name: "result-idle-timeout", Value: serve.DefaultIdleTimeout, Usage: "cancel a query whose client takes no result batch for this long, releasing its graph (0: never)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "time running calls get to finish on SIGINT/SIGTERM before they are canceled"},
			&cli.BoolFlag{Name: "log-json", Usage: "log one JSON object per line instead of key=value text"},
			&cli.StringFlag{Name: "debug-addr", Usage: "serve Go's profiles (net/http/pprof: /debug/pprof/) over HTTP on `HOST:PORT`, without TLS or token: keep it on loopback"},
		},
		Action: func(c *cli.Context) error { return serveAction(c, e) },
	}
}

func serveAction(c *cli.Context, e *env) error {
	if c.NArg() > 0 {
		return usererr.New(usererr.Usage, fmt.Sprintf("unexpected argument %q", c.Args().First()), "see 'gpipe serve --help'")
	}
	cfg, err := serveConfig(c)
	if err != nil {
		return err
	}
	log := slog.New(logHandler(e.stderr, c.Bool("log-json")))
	cfg.Logger = log
	srv, err := serve.New(cfg)
	if err != nil {
		return err
	}
	addr := c.String("addr")
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return usererr.New(usererr.Usage, fmt.Sprintf("cannot listen on %s: %v", addr, err), "pick a free port with --addr")
	}
	if cfg.Token == "" && !isLoopback(lis.Addr()) {
		log.Warn("listening beyond loopback without --token-file: anyone who can reach the port can upload and query")
	}
	if n := len(cfg.Token); n > 0 && n < minTokenBytes {
		log.Warn(fmt.Sprintf("the bearer token is %d bytes: a token under %d bytes can be guessed; put 16 bytes or more in --token-file, such as the output of 'openssl rand -hex 32'", n, minTokenBytes))
	}
	if cfg.Token != "" && !srv.TLS() && !isLoopback(lis.Addr()) {
		log.Warn("the bearer token travels in clear text: pass --tls-cert and --tls-key")
	}
	if debug := c.String("debug-addr"); debug != "" {
		stop, err := serveDebug(debug, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	eff := srv.Config()
	log.Info("serving Arrow Flight", "addr", lis.Addr().String(), "tls", srv.TLS(), "auth", cfg.Token != "", "backend", c.String("backend"),
		"upload_idle_timeout", c.Duration("upload-idle-timeout"), "result_idle_timeout", c.Duration("result-idle-timeout"))
	log.Info("limits", "max_memory_bytes", byteLimit(eff.MaxMemoryBytes), "max_upload_bytes", byteLimit(eff.MaxUploadBytes),
		"max_message_bytes", bytesize.Format(int64(eff.MaxMessageBytes)), "max_graphs", countLimit(eff.MaxGraphs),
		"max_concurrent_jobs", eff.MaxConcurrentJobs, "max_query_time", timeLimit(eff.MaxQueryTime),
		"max_iterations", countLimit(eff.MaxIterations), "max_upload_time", timeLimit(eff.MaxUploadTime),
		"go_memory_limit", byteLimit(runtimeLimit(eff)))

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		srv.Shutdown(context.Background())
		return usererr.Newf(usererr.Internal, "the server stopped: %v", err)
	case <-c.Context.Done():
	}
	// A signal: stop accepting, give running calls the timeout, then cancel
	// them; a second signal cancels them at once. This is the expected way
	// to stop, so the exit status is 0.
	timeout := c.Duration("shutdown-timeout")
	log.Info("shutting down; a second signal cancels the running calls", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	go func() {
		select {
		case <-again:
			cancel()
		case <-ctx.Done():
		}
	}()
	if srv.Shutdown(ctx) {
		log.Warn("canceled the calls still running at the shutdown timeout")
	}
	<-served
	log.Info("stopped")
	return nil
}

// serveConfig reads the flags into a server configuration.
func serveConfig(c *cli.Context) (serve.Config, error) {
	cfg := serve.Config{
		Backend:           c.String("backend"),
		TLSCertFile:       c.String("tls-cert"),
		TLSKeyFile:        c.String("tls-key"),
		MaxGraphs:         noneIfZero(c.Int("max-graphs")),
		MaxConcurrentJobs: c.Int("max-concurrent-jobs"),
		MaxIterations:     noneIfZero(c.Int("max-iterations")),
		BatchRows:         c.Int("batch-rows"),
	}
	var err error
	if cfg.MaxUploadBytes, err = byteLimitFlag(c, "max-upload-bytes"); err != nil {
		return cfg, err
	}
	if cfg.MaxMemoryBytes, err = byteLimitFlag(c, "max-memory-bytes"); err != nil {
		return cfg, err
	}
	msg, err := byteFlag(c, "max-message-bytes")
	if err != nil {
		return cfg, err
	}
	if msg < 1<<20 || msg > 2<<30-1 {
		return cfg, usererr.New(usererr.Usage, fmt.Sprintf("--max-message-bytes %s is out of range", c.String("max-message-bytes")), "use 1MiB to 2GiB")
	}
	cfg.MaxMessageBytes = int(msg)
	if c.Int("max-graphs") < 0 || c.Int("max-iterations") < 0 || cfg.MaxConcurrentJobs < 1 || cfg.BatchRows < 1 {
		return cfg, usererr.New(usererr.Usage, "--max-graphs and --max-iterations must be >= 0, --max-concurrent-jobs and --batch-rows >= 1", "see 'gpipe serve --help'")
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{
		{"upload-idle-timeout", &cfg.UploadIdleTimeout}, {"result-idle-timeout", &cfg.ResultIdleTimeout},
		{"max-upload-time", &cfg.MaxUploadTime}, {"max-query-time", &cfg.MaxQueryTime},
	} {
		if *d.to, err = idleFlag(c, d.name); err != nil {
			return cfg, err
		}
	}
	if f := c.String("token-file"); f != "" {
		if cfg.Token, err = readToken(f); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

func byteFlag(c *cli.Context, name string) (int64, error) {
	n, err := serve.ParseBytes(c.String(name))
	if err != nil {
		return 0, usererr.New(usererr.Usage, fmt.Sprintf("--%s: %v", name, err), "see 'gpipe serve --help'")
	}
	return n, nil
}

// byteLimitFlag reads a byte limit into serve.Config's terms, where 0 is
// the default (the flag not given) and a negative count no limit (0 given).
func byteLimitFlag(c *cli.Context, name string) (int64, error) {
	if c.String(name) == "" {
		return 0, nil
	}
	n, err := byteFlag(c, name)
	return noneIfZero(n), err
}

// noneIfZero is a flag's count in serve.Config's terms: the flag's 0 (no
// limit) is Config's negative.
func noneIfZero[T int | int64](n T) T {
	if n == 0 {
		return -1
	}
	return n
}

// byteLimit, countLimit and timeLimit are limits as the start's log line
// shows them.
func byteLimit(n int64) string {
	if n <= 0 {
		return "none"
	}
	return bytesize.Format(n)
}

func countLimit(n int) string {
	if n <= 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// timeLimit is a time limit for the log: "none" for 0, else the duration
// (which the JSON log gives in seconds).
func timeLimit(d time.Duration) slog.LogValuer { return limitValue(d) }

type limitValue time.Duration

func (d limitValue) LogValue() slog.Value {
	if d <= 0 {
		return slog.StringValue("none")
	}
	return slog.DurationValue(time.Duration(d))
}

// logHandler is serve's log on w: key=value text (durations as Go writes
// them, 1m30s), or with json one JSON object a line, whose durations are
// seconds, numbers under keys ending in _s (slog's JSON gives nanoseconds,
// which log tools take for plain integers).
func logHandler(w io.Writer, json bool) slog.Handler {
	if !json {
		return slog.NewTextHandler(w, nil)
	}
	return slog.NewJSONHandler(w, &slog.HandlerOptions{ReplaceAttr: durationSeconds})
}

// durationSeconds turns a duration attribute into seconds.
func durationSeconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "_s") {
		key += "_s"
	}
	return slog.Float64(key, a.Value.Duration().Seconds())
}

// runtimeLimit sets the Go runtime's soft memory limit (as GOMEMLIMIT
// would) to the server's memory limit plus the margin it does not count
// (serve.RuntimeMemoryLimit), so that the garbage collector keeps the
// heap near what the limit allows rather than let it grow to twice what
// is live; it leaves a GOMEMLIMIT the environment sets. It returns the
// limit in force, 0 for none.
func runtimeLimit(cfg serve.Config) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		n := debug.SetMemoryLimit(-1)
		if n == math.MaxInt64 {
			return 0
		}
		return n
	}
	n := serve.RuntimeMemoryLimit(cfg)
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	return n
}

// idleFlag reads a timeout flag into serve.Config's terms, where 0 is the
// default and a negative duration no limit.
func idleFlag(c *cli.Context, name string) (time.Duration, error) {
	d := c.Duration(name)
	switch {
	case d < 0:
		return 0, usererr.New(usererr.Usage, fmt.Sprintf("--%s %v must not be negative", name, d), "use 0 for no limit")
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// minTokenBytes is the shortest bearer token the server takes without a
// warning: a shorter one (a word, a PIN) can be guessed by a client that
// tries many; 16 random bytes cannot.
const minTokenBytes = 16

// readToken reads the bearer token from file.
func readToken(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usererr.New(usererr.Input, fmt.Sprintf("cannot read the token file: %v", err), "pass a readable file to --token-file")
	}
	token := strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", usererr.New(usererr.Input, fmt.Sprintf("token file %s must hold one token without spaces", file),
			"write a token such as the output of 'openssl rand -hex 32' into it")
	}
	return token, nil
}

// serveDebug serves the runtime's profiles (CPU, heap, goroutines,
// blocking, mutexes, execution trace) over HTTP on addr, so that an
// operator can profile the running server without restarting it:
//
//	go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=10
//
// The handlers get their own mux, not http.DefaultServeMux. stop closes the
// listener.
func serveDebug(addr string, log *slog.Logger) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("cannot listen on %s for --debug-addr: %v", addr, err), "pick a free port")
	}
	if !isLoopback(lis.Addr()) {
		log.Warn("--debug-addr listens beyond loopback: anyone who can reach it can read the server's memory profile and stacks, without a token")
	}
	// Sample contention, so that the mutex and block profiles say where
	// concurrent queries wait: about one event in 100, and blocking
	// every 10 µs on average.
	runtime.SetMutexProfileFraction(100)
	runtime.SetBlockProfileRate(10_000)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(lis)
	log.Info("serving profiles", "debug_addr", "http://"+lis.Addr().String()+"/debug/pprof/")
	return func() { srv.Close() }, nil
}

// isLoopback says whether addr is a loopback address.
func isLoopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
