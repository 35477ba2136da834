package serve

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/gpipe/gpipe/internal/bytesize"
)

// budget is the server's memory limit: the bytes held by stored graphs and
// by the edge tables of uploads still arriving. Uploads reserve as their
// tables grow, so several large uploads at once cannot together go over it.
type budget struct {
	mu   sync.Mutex
	max  int64 // 0: no limit
	used int64
}

// reserve takes n bytes, or says why it cannot.
func (b *budget) reserve(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+n > b.max {
		return status.Errorf(codes.ResourceExhausted,
			"the server's memory limit (--max-memory-bytes %s) is reached: %s held, %s more needed; drop a graph or raise the limit",
			bytesize.Format(b.max), bytesize.Format(b.used), bytesize.Format(n))
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
type jobs chan struct{}

func newJobs(n int) jobs { return make(jobs, n) }

// acquire waits for a slot; the caller calls the returned release once.
func (j jobs) acquire(ctx context.Context) (release func(), err error) {
	select {
	case j <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-j }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// running is the number of slots taken.
func (j jobs) running() int { return len(j) }

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
