// Package edges is what every reader of edge tables produces and shares: the
// Table (the edge columns as they were read, chunk by chunk), the Options a
// read takes, and the errors and skip reasons every reader reports in the
// same words. It knows nothing of file formats, graph layouts or devices.
package edges

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/objstore"
)

// KeyType is the type of a vertex key column.
type KeyType int

const (
	KeyInt32 KeyType = iota + 1
	KeyInt64
	KeyUint32
	KeyUint64
	KeyString // utf8 in Arrow terms; large_utf8 and dictionary-encoded strings read as this too
)

func (t KeyType) String() string {
	switch t {
	case KeyInt32:
		return "int32"
	case KeyInt64:
		return "int64"
	case KeyUint32:
		return "uint32"
	case KeyUint64:
		return "uint64"
	case KeyString:
		return "string"
	}
	return fmt.Sprintf("KeyType(%d)", int(t))
}

// ArrowType is the plain Arrow type of keys of this type (utf8 for strings).
func (t KeyType) ArrowType() arrow.DataType {
	switch t {
	case KeyInt32:
		return arrow.PrimitiveTypes.Int32
	case KeyInt64:
		return arrow.PrimitiveTypes.Int64
	case KeyUint32:
		return arrow.PrimitiveTypes.Uint32
	case KeyUint64:
		return arrow.PrimitiveTypes.Uint64
	}
	return arrow.BinaryTypes.String
}

// Keys is one chunk's vertex keys. Exactly one field is set, the one that
// matches the table's KeyType. Slices may alias memory the table does not own
// (a memory-mapped file); they are valid until Table.Release.
type Keys struct {
	Int32  []int32
	Int64  []int64
	Uint32 []uint32
	Uint64 []uint64
	Str    *Strings
}

// Len is the number of keys.
func (k *Keys) Len() int {
	switch {
	case k.Int32 != nil:
		return len(k.Int32)
	case k.Int64 != nil:
		return len(k.Int64)
	case k.Uint32 != nil:
		return len(k.Uint32)
	case k.Uint64 != nil:
		return len(k.Uint64)
	case k.Str != nil:
		return k.Str.Len()
	}
	return 0
}

// Strings is a column of strings in Arrow's layout: value i is
// Data[Offsets[i]:Offsets[i+1]].
type Strings struct {
	Offsets []int64
	Data    []byte
}

// Len is the number of strings.
func (s *Strings) Len() int {
	if len(s.Offsets) == 0 {
		return 0
	}
	return len(s.Offsets) - 1
}

// At is string i's bytes, aliasing Data.
func (s *Strings) At(i int) []byte { return s.Data[s.Offsets[i]:s.Offsets[i+1]] }

// Chunk is a run of consecutive input rows: a Parquet row group, an Arrow
// record batch, a block of text lines.
type Chunk struct {
	// FirstRow is the input row number (0-based, counting every row of the
	// input, skipped ones too) of the chunk's first row, so that later stages
	// can name rows in their errors.
	FirstRow int64
	// Rows maps chunk positions to input rows where rows were skipped inside
	// the chunk; nil means position i is input row FirstRow+i.
	Rows   []int64
	Src    Keys
	Dst    Keys
	Weight []float64 // nil when the table has no weight column
}

// Len is the number of edges in the chunk.
func (c *Chunk) Len() int { return c.Src.Len() }

// Row is the input row number of chunk position i.
func (c *Chunk) Row(i int) int64 {
	if c.Rows != nil {
		return c.Rows[i]
	}
	return c.FirstRow + int64(i)
}

// Table is an edge list read from one input, in chunks.
type Table struct {
	Name      string  // the input as the user named it, for messages
	Columns   Columns // the options it was read with
	KeyType   KeyType
	HasWeight bool
	Chunks    []Chunk
	// RowsRead counts every input row, skipped ones included.
	RowsRead int64
	// Skipped counts rows dropped by SkipInvalid, by reason.
	Skipped Skips
	// KeyArrowType is the Arrow type the keys had (int64, utf8, large_utf8,
	// dictionary<..., utf8>...); the output's vertex column uses its value type.
	KeyArrowType arrow.DataType
	// Lines maps a text input's rows to its lines (LineOf); nil for others.
	Lines *LineMap
	// Mirror is 1 for a symmetric and -1 for a skew-symmetric Matrix
	// Market input, whose off-diagonal entries give two edges each: the
	// entry, then its mirror, of the same row.
	Mirror int
	// Notes say what the read did with the input that a reader of the
	// result might not expect (decimal weights rounded to float64), for
	// the job's report.
	Notes []string
	// Parts are the files of a dataset read as this table, in the order
	// their rows are numbered (parts.go); nil for one file.
	Parts []Part
	// WeightUnread says the input has a weight column (the one Columns
	// names, or a text line's third field) that the read left out, as
	// Columns.ReadWeight said: the job's report can say that the operator
	// ignored it (unweighted pagerank) and how to use it.
	WeightUnread bool
	release      []func()
}

// MirrorOf says whether edge j of chunk c is one the input did not write:
// the mirror of an entry of a symmetric or skew-symmetric Matrix Market
// file. Then it names the entry it mirrors, for messages ("the
// skew-symmetric mirror of the entry 2 1 5", which the input row's line
// holds), and what to do where the mirror's weight is refused; else it
// returns "", "".
func (t *Table) MirrorOf(c *Chunk, j int) (note, fix string) {
	if t.Mirror == 0 || c.Rows == nil || j <= 0 || j >= c.Len() || c.Rows[j] != c.Rows[j-1] || c.Src.Int64 == nil {
		return "", ""
	}
	entry := fmt.Sprintf("%d %d", c.Src.Int64[j-1], c.Dst.Int64[j-1])
	if c.Weight != nil {
		entry += " " + strconv.FormatFloat(c.Weight[j-1], 'g', -1, 64)
	}
	if t.Mirror < 0 {
		return "the skew-symmetric mirror of the entry " + entry,
			"a skew-symmetric matrix's mirrored values have the opposite sign; to read only the entries as written, make the banner's symmetry general, or pass --skip-invalid to drop such edges"
	}
	return "the symmetric mirror of the entry " + entry, "fix the weight or pass --skip-invalid to drop such rows"
}

// LineOf is the 1-based line of input row `row` in a text input (edge list,
// Matrix Market, CSV), so that later stages can name the line a user sees in an
// editor; 0 for other inputs.
func (t *Table) LineOf(row int64) int64 {
	if p, r := t.PartOf(row); p != nil {
		if p.Lines == nil {
			return 0
		}
		return p.Lines.Line(r)
	}
	if t.Lines == nil {
		return 0
	}
	return t.Lines.Line(row)
}

// NumEdges is the number of edges (rows kept) over all chunks.
func (t *Table) NumEdges() int64 {
	var n int64
	for i := range t.Chunks {
		n += int64(t.Chunks[i].Len())
	}
	return n
}

// OnRelease registers a function that frees memory the chunks alias (an
// mmap, allocator buffers). Release calls them in reverse order.
func (t *Table) OnRelease(f func()) { t.release = append(t.release, f) }

// Release frees what the table holds. The chunks must not be used after.
func (t *Table) Release() {
	for i := len(t.release) - 1; i >= 0; i-- {
		t.release[i]()
	}
	t.release = nil
	t.Chunks = nil
}

// Skips counts skipped rows by reason ("null key in column \"src\"").
type Skips map[string]int64

// Add records n rows skipped for reason.
func (s Skips) Add(reason string, n int64) { s[reason] += n }

// Total is the number of rows skipped for any reason.
func (s Skips) Total() int64 {
	var n int64
	for _, c := range s {
		n += c
	}
	return n
}

// String lists the reasons and counts, most frequent first.
func (s Skips) String() string {
	reasons := make([]string, 0, len(s))
	for r := range s {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if s[reasons[i]] != s[reasons[j]] {
			return s[reasons[i]] > s[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%s: %s", Rows(s[r]), r)
	}
	return strings.Join(parts, "; ")
}

// Rows is "1 row" or "n rows".
func Rows(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// Columns names the edge columns and says which to read.
type Columns struct {
	Src    string // default "src"
	Dst    string // default "dst"
	Weight string // default "weight"
	// WeightExplicit says the user named the weight column: when it is
	// missing that is an error, where a missing default column means weight 1.
	WeightExplicit bool
	// ReadWeight says the operator uses weights. When false, the weight
	// column is not read at all (and HasWeight stays false); one the user
	// named must still be there.
	ReadWeight bool
}

// WithDefaults fills empty names with "src", "dst" and "weight".
func (c Columns) WithDefaults() Columns {
	if c.Src == "" {
		c.Src = "src"
	}
	if c.Dst == "" {
		c.Dst = "dst"
	}
	if c.Weight == "" {
		c.Weight = "weight"
	}
	return c
}

// Options control a read.
type Options struct {
	Columns Columns
	// Format overrides the format the input's extension implies: "parquet",
	// "arrow" (IPC file), "arrows" (IPC stream), "csv", "text", "mtx".
	Format string
	// SkipInvalid drops rows with a null key or an invalid weight, counting
	// them in Table.Skipped, where the default is to fail on the first.
	SkipInvalid bool
	// Alloc allocates the buffers that decoded columns go into; nil means
	// Go memory. The GPU backend passes a pinned-memory allocator.
	Alloc memory.Allocator
	// Store says how s3:// and https:// inputs are reached: an
	// S3-compatible endpoint, retries, timeouts. The zero value takes the
	// AWS SDK's configuration (AWS_ENDPOINT_URL, credentials) and
	// objstore's defaults.
	Store objstore.Options
	// Stream, when set, is handed the table's rows as they are decoded,
	// so that a consumer (the GPU's graph build) can copy them while the
	// rest is read. Readers that decode a whole table at once into its
	// final places say so (the Parquet reader, without SkipInvalid);
	// others ignore it, and the consumer then finds rows missing.
	Stream Stream
	// Header says whether a CSV file or a text edge list starts with a
	// line of column names: HeaderAuto ("") tells from the lines.
	Header Header
	// Delimiter separates a CSV file's fields: ',' when 0.
	Delimiter rune
	// Progress, when set, counts the input rows read so far, for a
	// caller that reports progress while the read runs.
	Progress *atomic.Int64
}

// Header is whether a text input's first line names its columns.
type Header string

const (
	// HeaderAuto tells a header from the lines: a CSV file's first line
	// is a header unless its fields fit the types of the lines after it;
	// an edge list's first line is refused where it looks like a header.
	HeaderAuto Header = ""
	HeaderYes  Header = "yes"
	HeaderNo   Header = "no"
)

// ParseHeader reads --header's value: yes, no or auto.
func ParseHeader(s string) (Header, bool) {
	switch strings.ToLower(s) {
	case "", "auto":
		return HeaderAuto, true
	case "yes", "true":
		return HeaderYes, true
	case "no", "false":
		return HeaderNo, true
	}
	return "", false
}

// CountRows adds n to opts.Progress, if there is one.
func (opts *Options) CountRows(n int64) {
	if opts.Progress != nil {
		opts.Progress.Add(n)
	}
}

// Stream is told of a table's rows as a reader decodes them.
type Stream interface {
	// Begin says how many rows the table will have, their key type and
	// whether it has weights; it comes once, before any Rows.
	Begin(rows int64, keys KeyType, weighted bool)
	// Rows gives the table's rows [first, first+c.Len()) as they will be
	// in Table.Chunks: c's slices stay valid until Table.Release. Calls
	// may come from several goroutines at once, in any order.
	Rows(first int64, c *Chunk)
}
