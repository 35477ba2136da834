package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"math"
	"path"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/internal/echo"
)

// Every call goes through one interceptor, unary or stream, which checks
// the bearer token, runs the handler, turns its error into a status, keeps
// a panic from taking the server down, and logs one line.

// callLog is what a handler tells the call's log line: rows sent to the
// client, and rows received from it; and where the call's time went: the
// operator's computation (compute_s), an upload's receiving and building
// (upload_s, build_s), so that the rest of duration_s is the service's.
// Only the handler's goroutine writes it, before the interceptor reads it.
type callLog struct {
	graph, op              string
	rows, rowsIn           int64
	compute, upload, build time.Duration
}

// names records the graph and the operator a call names: a valid graph
// name whole, anything else cut short (a client may send 1 MiB of name).
func (c *callLog) names(graph, op string) {
	c.graph, c.op = graph, echo.Prefix(op)
	if checkName(graph) != nil {
		c.graph = echo.Prefix(graph)
	}
}

type callLogKey struct{}

// logOf is the call's log record, or a scratch one outside a call (tests
// calling handlers directly).
func logOf(ctx context.Context) *callLog {
	if c, ok := ctx.Value(callLogKey{}).(*callLog); ok {
		return c
	}
	return &callLog{}
}

func (s *service) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	c := &callLog{}
	ctx = context.WithValue(ctx, callLogKey{}, c)
	start := time.Now()
	defer func() {
		err = s.finish(ctx, info.FullMethod, c, start, recover(), err)
	}()
	if err := s.authorize(ctx); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *service) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	c := &callLog{}
	ctx := context.WithValue(ss.Context(), callLogKey{}, c)
	start := time.Now()
	defer func() {
		err = s.finish(ctx, info.FullMethod, c, start, recover(), err)
	}()
	if err := s.authorize(ctx); err != nil {
		return err
	}
	return handler(srv, &callStream{ServerStream: ss, ctx: ctx})
}

// callStream is a stream whose context carries the call's log record.
type callStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *callStream) Context() context.Context { return c.ctx }

// RecvMsg receives the client's next message; one that is not the protobuf
// message it should be is InvalidArgument (gRPC would say Internal).
func (c *callStream) RecvMsg(m any) error {
	r := request{msg: m}
	if err := c.ServerStream.RecvMsg(&r); err != nil {
		return err
	}
	return r.err
}

// decodeRequests is desc with each unary method's request decoded as a
// request, so that one the codec cannot decode is answered InvalidArgument
// through the unary interceptor (which checks the token and logs the
// call) instead of the method, rather than Internal by gRPC before any
// interceptor runs.
func decodeRequests(desc grpc.ServiceDesc) grpc.ServiceDesc {
	desc.Methods = slices.Clone(desc.Methods)
	for i := range desc.Methods {
		handle := desc.Methods[i].Handler
		desc.Methods[i].Handler = func(srv any, ctx context.Context, dec func(any) error, next grpc.UnaryServerInterceptor) (any, error) {
			var bad error
			decode := func(m any) error {
				r := request{msg: m}
				if err := dec(&r); err != nil {
					return err
				}
				bad = r.err
				return nil
			}
			intercept := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if bad != nil {
					handler = func(context.Context, any) (any, error) { return nil, bad }
				}
				return next(ctx, req, info, handler)
			}
			return handle(srv, ctx, decode, intercept)
		}
	}
	return desc
}

// finish turns a handler's outcome into the call's status and logs it.
func (s *service) finish(ctx context.Context, method string, c *callLog, start time.Time, panicked any, err error) error {
	if panicked != nil {
		s.log.Error("panic in a call", "method", path.Base(method), "panic", fmt.Sprint(panicked), "stack", string(debug.Stack()))
		// The client gets no panic's text: it is the server's fault, and
		// the log has it with its stack.
		err = status.Error(codes.Internal, "internal error: the server failed on this call (a bug; its log has the details)")
	}
	err = toStatus(ctx, err)
	st := status.Convert(err)
	attrs := []any{
		"method", path.Base(method),
		"graph", c.graph, "op", c.op, "rows", c.rows,
	}
	if c.rowsIn > 0 {
		attrs = append(attrs, "rows_in", c.rowsIn)
	}
	seconds := func(d time.Duration) float64 { return math.Round(d.Seconds()*1e6) / 1e6 }
	attrs = append(attrs, "duration_s", seconds(time.Since(start)))
	for _, part := range []struct {
		name string
		d    time.Duration
	}{{"compute_s", c.compute}, {"upload_s", c.upload}, {"build_s", c.build}} {
		if part.d > 0 {
			attrs = append(attrs, part.name, seconds(part.d))
		}
	}
	attrs = append(attrs, "status", st.Code().String())
	if p, ok := peer.FromContext(ctx); ok {
		attrs = append(attrs, "peer", p.Addr.String())
	}
	level := slog.LevelInfo
	if err != nil {
		attrs = append(attrs, "error", st.Message())
		if serverFault(st.Code()) {
			level = slog.LevelError
		}
	}
	s.log.Log(context.Background(), level, "rpc", attrs...)
	return err
}

// serverFault says whether a status code means the server failed, rather
// than the client asking for something it cannot have.
func serverFault(c codes.Code) bool {
	return c == codes.Internal || c == codes.Unknown || c == codes.DataLoss
}

// authorize checks the call's bearer token, when the server has one. The
// token is compared by its SHA-256 hash in constant time, so that neither
// the comparison's time nor its early exit on a length mismatch tells
// anything about the token.
//
// A missing token and a wrong one are both Unauthenticated: the caller is
// not identified. (PermissionDenied is for an identified caller that may
// not do something; with one token per server there is no such caller.)
func (s *service) authorize(ctx context.Context) error {
	if s.tokenHash == nil {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return status.Error(codes.Unauthenticated, `this server needs a bearer token: send the header "authorization: Bearer TOKEN"`)
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return status.Error(codes.Unauthenticated, `the authorization header must be "Bearer TOKEN"`)
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(h[:], s.tokenHash[:]) != 1 {
		return status.Error(codes.Unauthenticated, "the bearer token is not valid for this server")
	}
	return nil
}
