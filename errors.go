package gpipe

import (
	"github.com/gpipe/gpipe/internal/usererr"
)

// Error is the error gpipe returns for everything a caller or its data can
// cause: one line that names the file, the column and the row (or line)
// where they are known, what is wrong and what to do about it. Its Kind
// says who can fix it; the command line's exit codes and the Flight
// service's gRPC codes come from the kind (README, "Errors and exit
// codes"). Take it from an error with errors.As, or test its kind with
// errors.Is and the sentinels below.
//
// Its fields: Kind; File (the input as the caller named it, "-" for
// standard input), Column, Row (0-based over all the input's rows; -1 for
// none) and Line (1-based, for text inputs; 0 for none), each empty where
// unknown; Problem (what is wrong) and Fix (what to do); Err, the cause.
// Causes are wrapped: a missing input file is also
// errors.Is(err, fs.ErrNotExist). A canceled or timed-out context comes
// back as context.Canceled or context.DeadlineExceeded (errors.Is), not
// as an Error.
type Error = usererr.Error

// ErrorKind classifies an Error by who can fix it.
type ErrorKind = usererr.Kind

// The kinds of Error, with the command line's exit code and the Flight
// service's gRPC status of each.
const (
	// KindInternal is a failure of gpipe or of the machine (a full disk):
	// exit 1, Internal.
	KindInternal ErrorKind = usererr.Internal
	// KindUsage is a bad option, parameter or operator name: exit 2,
	// InvalidArgument.
	KindUsage ErrorKind = usererr.Usage
	// KindInput is bad input data: a file that cannot be read, a null key,
	// a negative weight where the operator needs weights >= 0: exit 3,
	// InvalidArgument.
	KindInput ErrorKind = usererr.Input
	// KindNotFound is a named thing that does not exist: a source key, a
	// graph: exit 3, NotFound.
	KindNotFound ErrorKind = usererr.NotFound
	// KindBackend is a backend that cannot run the job: no usable GPU, a
	// graph larger than its memory: exit 4, FailedPrecondition.
	KindBackend ErrorKind = usererr.Backend
	// KindLimit is a resource limit reached (a server's memory, upload or
	// query-time limit): exit 5, ResourceExhausted.
	KindLimit ErrorKind = usererr.Limit
)

// Sentinels, one a kind: errors.Is(err, gpipe.ErrInput) holds for every
// Error of kind KindInput in err's chain.
var (
	ErrUsage    = usererr.ErrUsage
	ErrInput    = usererr.ErrInput
	ErrNotFound = usererr.ErrNotFound
	ErrBackend  = usererr.ErrBackend
	ErrLimit    = usererr.ErrLimit
)

// KindOf is the kind of err: that of the first Error in its chain, else
// KindInternal.
func KindOf(err error) ErrorKind { return usererr.KindOf(err) }
