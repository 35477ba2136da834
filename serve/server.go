// Package serve is gpipe's Arrow Flight service (`gpipe serve`): clients
// upload edge tables as Arrow record batches (DoPut), run operators on the
// graphs the server keeps (DoGet), or send edges and get results back in one
// call without keeping anything (DoExchange). ListFlights and GetFlightInfo
// describe the graphs held; the "drop" action frees one.
//
// The service adds no second implementation of reading, building or
// running: uploads go through arrowipc.Appender, graphs are built by
// pipeline.Build and queried with pipeline.Graph.Run, and results are
// pipeline.Result.Rows a batch at a time. What is the service's own: where a
// query runs (placement.go: the GPU's memory), moving Arrow buffers through
// gRPC without copies (codec.go, send.go), limits, idle clients, the
// catalog. See docs/serve.md for the protocol, its JSON and its status
// codes.
package serve

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"

	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/cost"
)

// Config is how a Server runs. A zero limit means its default; a negative
// one, no limit (see limits.go).
type Config struct {
	// Backend is "auto" (default), "cpu" or "gpu": where operators run.
	Backend string
	// Token, when set, is the bearer token every call must carry in its
	// "authorization: Bearer TOKEN" header.
	Token string
	// TLSCertFile and TLSKeyFile, both set, make the server speak TLS.
	TLSCertFile, TLSKeyFile string
	// MachineMemory is the memory the default memory limits are fractions
	// of; 0 means what the process may use (the machine's, or its
	// container's limit where lower).
	MachineMemory int64
	// MaxMemoryBytes bounds the memory of all stored graphs together with
	// the uploads under way: their edge tables, and room for the messages
	// each has in flight (messageRoom). Default: half of MachineMemory.
	MaxMemoryBytes int64
	// MaxUploadBytes bounds the memory one upload's edge table may take.
	// Default: a quarter of MaxMemoryBytes (an eighth of MachineMemory
	// where MaxMemoryBytes is no limit).
	MaxUploadBytes int64
	// MaxGraphs bounds the graphs stored (uploads under way count).
	// Default: DefaultMaxGraphs.
	MaxGraphs int
	// MaxConcurrentJobs bounds the builds and operator runs at once;
	// others wait their turn (jobs on small graphs have slots of their
	// own besides). 0 means DefaultConcurrentJobs.
	MaxConcurrentJobs int
	// MaxQueryTime bounds a query's computation (from when it has its job
	// slot); one that runs longer is stopped with DeadlineExceeded.
	// Default: DefaultMaxQueryTime.
	MaxQueryTime time.Duration
	// MaxIterations bounds the iterations a query may ask for (PageRank's
	// max_iterations). Default: DefaultMaxIterations.
	MaxIterations int
	// BatchRows is the most rows a result batch holds; 0 means
	// DefaultBatchRows. A ticket may ask for fewer.
	BatchRows int
	// MaxMessageBytes is the largest gRPC message (one record batch) the
	// server accepts; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// UploadIdleTimeout abandons an upload (DoPut, DoExchange) whose client
	// sends no message for this long, freeing its memory and its graph
	// slot. ResultIdleTimeout cancels a result (DoGet, DoExchange) whose
	// client takes no batch for this long, releasing its graph. Default:
	// DefaultIdleTimeout.
	UploadIdleTimeout, ResultIdleTimeout time.Duration
	// MaxUploadTime abandons an upload whose client has not sent its last
	// message this long after the call began, however steadily it sends.
	// Default: DefaultMaxUploadTime.
	MaxUploadTime time.Duration
	// Logger gets one line per call; nil means slog.Default().
	Logger *slog.Logger

	// gpu, when set, stands for the GPU (tests without one).
	gpu gpuDevice
	// model, when set, is the cost model auto decides each query by (nil:
	// the GPU's own); tests set it to send queries to either side.
	model *cost.Model
	// smallJobEdges is the most edges of a small job's graph; 0 means
	// defaultSmallJobEdges, a negative count that no job is small.
	smallJobEdges int64
}

// Defaults for the zero values of Config.
const (
	DefaultConcurrentJobs  = 4
	DefaultBatchRows       = 64 << 10
	DefaultMaxMessageBytes = 64 << 20
	// DefaultIdleTimeout is longer than any pause a working client makes
	// (reading and sending a 64 MiB batch takes seconds), and short enough
	// that a stalled client gives its slot, memory and graph back within
	// minutes.
	DefaultIdleTimeout = 2 * time.Minute
)

// The transport's sizes, for messages of megabytes (record batches) rather
// than gRPC's usual kilobytes. A connection reads and writes through
// buffers of connBufferBytes (gRPC's default, 32 KiB, makes a system call
// for every two 16 KiB HTTP/2 frames: 30,000 calls for a gigabyte). A
// client may send windowBytes of an upload, on one call and on the
// connection, before the server reads it: a fixed window as large as the
// most gRPC's own estimate of the link grows to (16 MiB), from the first
// byte, so that an upload on loopback never waits for the window to grow,
// nor for the server's reads while it appends a batch. It is also what a
// connection can make the server hold unread. Results are not affected:
// the client's window bounds them.
const (
	connBufferBytes = 256 << 10
	windowBytes     = 16 << 20
)

// Server is a Flight service over the graphs it holds.
type Server struct {
	svc  *service
	grpc *grpc.Server
}

// service implements the Flight RPCs. It is separate from Server so that
// the generated handler methods do not become Server's API.
type service struct {
	flight.BaseFlightServer

	cfg       Config
	log       *slog.Logger
	tokenHash *[sha256.Size]byte // nil: no authentication
	backend   *pipeline.Backend  // the memory uploads and graphs go into
	place     *placement
	graphs    *registry
	mem       *budget
	jobs      *jobs
	// released, where set (tests), is called after a query's result is
	// released (releaseResult).
	released func()
}

// New makes a server from cfg: it opens the backend (failing at once when
// "gpu" is asked for and none is usable) and loads the TLS key pair.
func New(cfg Config) (*Server, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	choice := cfg.Backend
	if cfg.gpu != nil {
		choice = "cpu" // Go memory, for the stand-in
	}
	backend, err := pipeline.OpenBackend(choice)
	if err != nil {
		return nil, err
	}
	svc := &service{
		cfg:     cfg,
		log:     cfg.Logger,
		backend: backend,
		place:   newPlacement(cfg.Backend, cfg.gpu, cfg.model),
		graphs:  newRegistry(cfg.MaxGraphs),
		mem:     &budget{max: cfg.MaxMemoryBytes},
		jobs:    newJobs(cfg.MaxConcurrentJobs),
	}
	svc.place.warm(svc.log)
	if cfg.Token != "" {
		h := sha256.Sum256([]byte(cfg.Token))
		svc.tokenHash = &h
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxMessageBytes),
		grpc.ForceServerCodecV2(flightCodec{}),
		experimental.BufferPool(serverBuffers),
		grpc.WriteBufferSize(connBufferBytes),
		grpc.ReadBufferSize(connBufferBytes),
		grpc.InitialWindowSize(uploadWindow(cfg.MaxMessageBytes)),
		grpc.InitialConnWindowSize(uploadWindow(cfg.MaxMessageBytes)),
		grpc.ChainUnaryInterceptor(svc.unaryInterceptor),
		grpc.ChainStreamInterceptor(svc.streamInterceptor),
		// Stop waits for the handlers, so that their graph references are
		// released before Shutdown frees the graphs.
		grpc.WaitForHandlers(true),
	}
	creds, err := loadTLS(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	s := &Server{svc: svc, grpc: grpc.NewServer(opts...)}
	desc := decodeRequests(flightgen.FlightService_ServiceDesc)
	s.grpc.RegisterService(&desc, svc)
	return s, nil
}

// loadTLS loads the server's certificate and key; nil when neither is set.
func loadTLS(certFile, keyFile string) (credentials.TransportCredentials, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, usererr.New(usererr.Usage, "TLS needs both a certificate and a key", "pass --tls-cert and --tls-key together")
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usererr.New(usererr.Input, fmt.Sprintf("cannot load the TLS key pair %s, %s: %v", certFile, keyFile, err),
			"pass a PEM certificate and its PEM private key")
	}
	return credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}), nil
}

// Config is the server's configuration with every default filled in (a
// negative limit is none).
func (s *Server) Config() Config { return s.svc.cfg }

// TLS says whether the server speaks TLS.
func (s *Server) TLS() bool { return s.svc.cfg.TLSCertFile != "" }

// Serve serves Flight calls on lis until Shutdown; it returns nil then
// (also when Shutdown came first).
func (s *Server) Serve(lis net.Listener) error {
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown stops accepting calls and waits for the running ones to finish;
// when ctx ends first, it cancels them (their computations stop) and waits
// for their handlers to return. Then it frees every graph. It says whether
// calls had to be canceled.
func (s *Server) Shutdown(ctx context.Context) (forced bool) {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		forced = true
		s.grpc.Stop()
		<-done
	}
	s.svc.graphs.close()
	return forced
}
