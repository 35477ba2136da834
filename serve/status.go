package serve

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/internal/usererr"
)

// toStatus turns a handler's error into the gRPC status the client gets.
// Errors that are statuses already pass through; a call whose client went
// away is Canceled, whatever the computation said as it stopped; library
// errors map by their usererr kind.
func toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "the call was canceled (the client went away or the server is stopping)")
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed")
	}
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		// A status wrapped by a library (the IPC reader and writer wrap
		// their stream's errors) keeps its own message.
		var se interface{ GRPCStatus() *status.Status }
		if errors.As(err, &se) {
			return se.GRPCStatus().Err()
		}
		return status.Error(codes.Internal, oneLine(err.Error()))
	}
	return status.Error(kindCode(ue.Kind), wireHints.Replace(oneLine(err.Error())))
}

// kindCode is the status code of a usererr kind.
func kindCode(k usererr.Kind) codes.Code {
	switch k {
	case usererr.Usage, usererr.Input:
		return codes.InvalidArgument
	case usererr.NotFound:
		return codes.NotFound
	case usererr.Backend:
		return codes.FailedPrecondition
	case usererr.Limit:
		return codes.ResourceExhausted
	}
	return codes.Internal
}

// wireHints rewrites the command line's flags in the library's messages
// into what a Flight client sets instead.
var wireHints = strings.NewReplacer(
	`pass --source KEY (in a Flight ticket: "source")`, `add "source": KEY to the query`,
	"--skip-invalid", `"skip_invalid": true`,
	"--src-col", `the "src" option`,
	"--dst-col", `the "dst" option`,
	"--weight-col", `the "weight" option`,
	"pass --unweighted", `put it with "unweighted": true`,
	"pass --weighted", `put "weighted": true in the query`,
	"leave --weighted out", `leave "weighted" out of the query`,
	"--weighted with --unweighted", `"weighted": true with "unweighted": true`,
	"use --backend cpu (or auto)", "start the server with --backend cpu (or auto)",
)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
