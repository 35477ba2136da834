package serve

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/sysmem"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The server's limits, so that no client can take all of its memory, its
// job slots or its graph slots for as long as it likes. Every limit is on
// by default: the memory limits are fractions of the memory of the machine
// (or of the container, where its limit is lower), the others fixed.

// Defaults of the limits that do not depend on the machine.
const (
	// DefaultMaxQueryTime bounds a query's computation: far longer than
	// any query a graph that fits in memory needs with the default
	// parameters, short enough that a runaway one (PageRank asked for a
	// tolerance it never reaches) gives its job slot back.
	DefaultMaxQueryTime = 10 * time.Minute
	// DefaultMaxIterations is ten times PageRank's default max_iterations.
	DefaultMaxIterations = 10_000
	// DefaultMaxUploadTime bounds an upload from its start to its last
	// message: 30 minutes move hundreds of gigabytes at network speeds, and
	// a client that drips a batch now and then gives its memory and graph
	// slot back within that.
	DefaultMaxUploadTime = 30 * time.Minute
	// DefaultMaxGraphs bounds the graphs stored and uploads under way.
	DefaultMaxGraphs = 64
)

// defaultSmallJobEdges is the most edges a graph of a small job has (see
// jobs): its bfs, sssp or cc takes milliseconds, its PageRank at most
// seconds under DefaultMaxIterations.
const defaultSmallJobEdges = 1 << 18

// DefaultMemoryLimits are the default --max-memory-bytes and
// --max-upload-bytes for a machine (or container) of total bytes: half of
// it for the stored graphs and the uploads under way (the other half is for
// what the limit does not count: the queries' working memory and results,
// the builds' scratch memory, the Go runtime), and a quarter of that for
// one upload's edge table (a build holds the table and the graph at
// once). 0 (the memory is not known): no limits.
func DefaultMemoryLimits(total int64) (memory, upload int64) {
	if total <= 0 {
		return -1, -1
	}
	return total / 2, total / 8
}

// withDefaults fills the zero values of cfg's limits with their defaults
// and checks them; after it a negative limit means none.
func (cfg *Config) withDefaults() error {
	if cfg.MaxConcurrentJobs <= 0 {
		cfg.MaxConcurrentJobs = DefaultConcurrentJobs
	}
	if cfg.BatchRows <= 0 {
		cfg.BatchRows = DefaultBatchRows
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxGraphs == 0 {
		cfg.MaxGraphs = DefaultMaxGraphs
	}
	if cfg.MachineMemory == 0 {
		cfg.MachineMemory = sysmem.Limit()
	}
	memory, upload := DefaultMemoryLimits(cfg.MachineMemory)
	if cfg.MaxMemoryBytes == 0 {
		cfg.MaxMemoryBytes = memory
	}
	if cfg.MaxUploadBytes == 0 {
		cfg.MaxUploadBytes = upload
		if cfg.MaxMemoryBytes > 0 {
			cfg.MaxUploadBytes = cfg.MaxMemoryBytes / 4
		}
	}
	for _, d := range []*time.Duration{&cfg.UploadIdleTimeout, &cfg.ResultIdleTimeout} {
		if *d == 0 {
			*d = DefaultIdleTimeout
		}
	}
	if cfg.MaxQueryTime == 0 {
		cfg.MaxQueryTime = DefaultMaxQueryTime
	}
	if cfg.MaxUploadTime == 0 {
		cfg.MaxUploadTime = DefaultMaxUploadTime
	}
	if cfg.MaxIterations == 0 {
		cfg.MaxIterations = DefaultMaxIterations
	}
	if cfg.smallJobEdges == 0 {
		cfg.smallJobEdges = defaultSmallJobEdges
	}
	return nil
}

// uploadWindow is the HTTP/2 flow-control window of a call and of a
// connection: what a client may send the server before it reads, see
// windowBytes. It is no larger than the largest message, so that the
// memory an upload holds for its messages in flight (messageRoom) is in
// proportion to the messages it may send. gRPC takes no window under 64
// KiB.
func uploadWindow(maxMessage int) int32 {
	return int32(max(64<<10, min(windowBytes, maxMessage)))
}

// messageRoom is the memory an upload holds of the budget while it
// receives, for what gRPC holds of it before it is decoded and appended
// to the edge table (which the budget counts as it grows): the message
// being received (its frames, up to --max-message-bytes) or the one in hand,
// and what the client sends ahead of the server's reads (the window).
func (cfg *Config) messageRoom() int64 {
	return int64(cfg.MaxMessageBytes) + int64(uploadWindow(cfg.MaxMessageBytes))
}

// budget is the server's memory limit: the bytes held by stored graphs and
// by uploads still arriving (their edge tables, and room for their
// messages in flight). Uploads reserve as their tables grow, so several
// large uploads at once cannot together go over it.
type budget struct {
	mu   sync.Mutex
	max  int64 // <= 0: no limit
	used int64
}

// reserve takes n bytes for what, or says why it cannot.
func (b *budget) reserve(n int64, what string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		return usererr.New(usererr.Limit,
			fmt.Sprintf("the server's memory limit (--max-memory-bytes %s) is reached: %s held, %s more needed for %s",
				bytesize.Format(b.max), bytesize.Format(b.used), bytesize.Format(n), what),
			"drop a graph, wait for uploads to end, or ask for a higher limit")
	}
	b.used += n
	return nil
}

// release gives n bytes back.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is the bytes reserved now.
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// jobs bounds the builds and operator runs that go on at once: each uses
// every core (or the GPU), so more at once only makes each slower and holds
// more memory. Waiting for a slot ends when the client goes away.
//
// A job on a small graph (at most Config.smallJobEdges edges) may take one
// of as many slots again, kept for such jobs, when the others are all
// taken: it takes milliseconds (seconds for a PageRank at the iteration
// ceiling), so that a short query is answered while long ones hold every
// slot of the others (they may run for --max-query-time).
type jobs struct {
	all, small chan struct{}
}

func newJobs(n int) *jobs {
	return &jobs{all: make(chan struct{}, n), small: make(chan struct{}, n)}
}

// acquire waits for a slot; the caller calls the returned release once.
func (j *jobs) acquire(ctx context.Context, small bool) (release func(), err error) {
	var lane chan struct{}
	select {
	case j.all <- struct{}{}:
		lane = j.all
	default:
		var kept chan struct{} // nil: never ready
		if small {
			kept = j.small
		}
		select {
		case j.all <- struct{}{}:
			lane = j.all
		case kept <- struct{}{}:
			lane = j.small
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var once sync.Once
	return func() { once.Do(func() { <-lane }) }, nil
}

// running is the number of slots taken.
func (j *jobs) running() int { return len(j.all) + len(j.small) }

// ParseBytes reads a byte count: a plain number, or one with a unit
// (k, KB, KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB; decimal units are powers
// of 1000, binary ones and single letters powers of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return !unicode.IsDigit(r) && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a byte count (examples: 1048576, 512MiB, 8GB)", s)
	}
	mult, ok := byteUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q (use B, KB, KiB, MB, MiB, GB, GiB, TB or TiB)", s, unit)
	}
	n := v * mult
	if n >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(n), nil
}

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
}

// RuntimeMemoryLimit is the soft memory limit for the Go runtime of a
// server with cfg (Server.Config: defaults filled in), as GOMEMLIMIT sets
// it: --max-memory-bytes and a quarter more, so that the garbage collector
// keeps the heap near what is live rather than let it grow to twice that
// (GOGC=100) with the buffers uploads leave behind. The quarter is for
// what the limit does not count: the queries' working memory and results,
// the builds' scratch memory, the requests of other calls. It is a soft
// limit: where they need more, the collector works harder and the heap
// grows past it. 0 where the memory is not limited.
func RuntimeMemoryLimit(cfg Config) int64 {
	if cfg.MaxMemoryBytes <= 0 {
		return 0
	}
	return cfg.MaxMemoryBytes + cfg.MaxMemoryBytes/4
}
