package arrowipc

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Reading Arrow record batches: from any array.RecordReader, from an Arrow
// IPC stream, batch by batch from an Arrow Flight DoPut (Appender), and the
// batches of a memory-mapped IPC file (file.go).
//
// Every batch's edge columns are seen as raw Arrow buffers (rawCol): the
// buffers of an arrow.Array, or a column's place in a mapped file. A column
// that has no nulls to drop and the right type becomes the chunk's slice
// over those buffers (the array is retained until edges.Table.Release);
// otherwise it is converted or gathered into buffers from Options.Alloc.
// Large batches are cut into chunks of at most chunkRows rows, so that a
// read checks its context between them and later stages get pieces to work
// on in parallel.

// chunkRows is the most rows a chunk made from a record batch holds.
const chunkRows = 1 << 22

// Appender builds an edges.Table from Arrow record batches as they arrive: an
// Arrow Flight DoPut, an IPC stream, any array.RecordReader. The schema is
// checked once, by NewAppender, and each batch by Append. Columns without
// nulls to drop and of the right type are not copied: the table keeps the
// batch's arrays (retained) and points into them. After an error from
// Append the Appender holds what it had; Release frees it.
type Appender struct {
	ctx    context.Context
	name   string
	opts   edges.Options
	schema *arrow.Schema
	cols   edgeColumns
	t      *edges.Table
	bytes  int64
	// held says which of the current batch's arrays the table retained.
	held [3]bool
	// mapAliased says a chunk points into a mapped file (arr == nil).
	mapAliased bool
	// copyRecords says records' buffers are copied, never aliased.
	copyRecords bool
	// The batch AppendMessage is adding: its body, whether the table holds
	// it, and whether its columns are copied rather than aliased; and the
	// schema message's layout (message.go).
	body      []byte
	bodyHeld  bool
	copyBody  bool
	msgLayout *schemaLayout
	batches   int
	done      bool
	idx       []int64 // scratch: dictionary indices
	// loss counts the decimal weights a float64 rounds.
	loss edges.DecimalLoss
}

// NewAppender starts a table from record batches of the given schema. name
// is the input as the user knows it, for messages.
func NewAppender(name string, schema *arrow.Schema, opts edges.Options) (*Appender, error) {
	return newAppender(context.Background(), name, schema, opts)
}

func newAppender(ctx context.Context, name string, schema *arrow.Schema, opts edges.Options) (*Appender, error) {
	opts.Columns = opts.Columns.WithDefaults()
	if schema == nil {
		return nil, usererr.InFile(name, "the input has no schema", "send an Arrow schema before the record batches")
	}
	rc, err := resolveColumns(name, schema, opts.Columns)
	if err != nil {
		return nil, err
	}
	a := &Appender{ctx: ctx, name: name, opts: opts, schema: schema, cols: rc}
	a.t = &edges.Table{
		Name:         name,
		Columns:      opts.Columns,
		KeyType:      rc.keyType,
		KeyArrowType: keyArrowTypeOf(rc.types[roleSrc]),
		HasWeight:    rc.idx[roleWeight] >= 0,
		WeightUnread: !opts.Columns.ReadWeight && len(schema.FieldIndices(opts.Columns.Weight)) > 0,
		Skipped:      edges.Skips{},
	}
	return a, nil
}

// Rows is the number of input rows appended so far, skipped ones included.
func (a *Appender) Rows() int64 { return a.t.RowsRead }

// Bytes is the memory the table holds so far: the buffers of the batches it
// retained and the buffers it allocated.
func (a *Appender) Bytes() int64 { return a.bytes }

// Release frees what the Appender holds, unless Finish handed it over.
func (a *Appender) Release() {
	if !a.done && a.t != nil {
		a.t.Release()
	}
	a.done = true
}

// Finish ends the table and hands it over: the caller releases it.
func (a *Appender) Finish() (*edges.Table, error) {
	if a.done {
		return nil, usererr.Newf(usererr.Internal, "%s: Appender.Finish after Finish or Release", a.name)
	}
	a.done = true
	if a.cols.dstKey != 0 {
		if err := edges.UnifyKeys(a.t, a.cols.keyType, a.cols.dstKey, a.opts.Alloc); err != nil {
			a.t.Release()
			return nil, err
		}
	}
	if a.cols.idx[roleWeight] >= 0 {
		if note := a.loss.Note(a.cols.names[roleWeight], decimalName(a.cols.types[roleWeight])); note != "" {
			a.t.Notes = append(a.t.Notes, note)
		}
	}
	return a.t, nil
}

// Append adds one record batch. The caller keeps its reference to rec and
// may release it as soon as Append returns.
func (a *Appender) Append(rec arrow.RecordBatch) error {
	if a.done {
		return usererr.Newf(usererr.Internal, "%s: Appender.Append after Finish or Release", a.name)
	}
	if err := a.ctx.Err(); err != nil {
		return err
	}
	rs := rec.Schema()
	var cols [3]rawCol
	nc := a.cols.ncols()
	for role := 0; role < nc; role++ {
		i := a.cols.idx[role]
		if !rs.Equal(a.schema) {
			// A batch of another schema must have the edge columns, by
			// name, with the same types.
			i = -1
			for j, f := range rs.Fields() {
				if f.Name == a.cols.names[role] {
					i = j
					break
				}
			}
			if i < 0 {
				return usererr.InFile(a.name, fmt.Sprintf("record batch %d has no column %s, which the schema announced", a.batches, echo.Quote(a.cols.names[role])),
					"send batches of one schema")
			}
			if got := rs.Field(i).Type; !arrow.TypeEqual(got, a.cols.types[role]) {
				return &usererr.Error{Kind: usererr.Input, File: a.name, Column: a.cols.names[role], Row: -1,
					Problem: fmt.Sprintf("record batch %d has the column as %s where the schema announced %s", a.batches, arrowTypeName(got), arrowTypeName(a.cols.types[role])),
					Fix:     "send batches of one schema"}
			}
		}
		arr := rec.Column(i)
		if int64(arr.Len()) != rec.NumRows() {
			return a.corrupt(role, fmt.Sprintf("record batch %d has %d rows but %d values in the column", a.batches, rec.NumRows(), arr.Len()))
		}
		cols[role] = rawFromData(arr.Data(), arr, role)
	}
	return a.appendRaw(cols[:nc], int(rec.NumRows()))
}

// appendRaw adds a batch of n rows given as raw columns.
func (a *Appender) appendRaw(cols []rawCol, n int) error {
	for c := range cols {
		if err := a.checkNulls(&cols[c]); err != nil {
			return err
		}
	}
	a.held = [3]bool{}
	first := a.t.RowsRead
	var sub [3]rawCol
	for lo := 0; lo < n; lo += chunkRows {
		if err := a.ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+chunkRows, n)
		for c := range cols {
			sub[c] = cols[c].slice(lo, hi)
		}
		if err := a.appendChunk(sub[:len(cols)], hi-lo, first+int64(lo)); err != nil {
			return err
		}
	}
	a.t.RowsRead += int64(n)
	a.opts.CountRows(int64(n))
	a.batches++
	return nil
}

// appendChunk makes one chunk of n rows, the first being input row first.
func (a *Appender) appendChunk(cols []rawCol, n int, first int64) error {
	if n == 0 {
		return nil
	}
	var sel []int32 // positions kept, when some were dropped
	var rows []int64
	anyNulls := false
	for c := range cols {
		anyNulls = anyNulls || cols[c].mayHaveNulls()
	}
	if anyNulls {
		var skips [3]int64
		for i := 0; i < n; i++ {
			null := -1
			for c := range cols {
				if cols[c].isNull(i) {
					null = c
					break
				}
			}
			if null < 0 {
				if sel != nil {
					sel = append(sel, int32(i))
					rows = append(rows, first+int64(i))
				}
				continue
			}
			if !a.opts.SkipInvalid {
				if null == roleWeight {
					return edges.ErrNullWeight(a.name, a.cols.names[null], first+int64(i))
				}
				return edges.ErrNullKey(a.name, a.cols.names[null], first+int64(i))
			}
			skips[null]++
			if sel == nil {
				sel = make([]int32, i, n)
				rows = make([]int64, i, n)
				for k := range sel {
					sel[k] = int32(k)
					rows[k] = first + int64(k)
				}
			}
		}
		for c, k := range skips {
			if k == 0 {
				continue
			}
			if c == roleWeight {
				a.t.Skipped.Add(edges.SkipNullWeight(a.cols.names[c]), k)
			} else {
				a.t.Skipped.Add(edges.SkipNullKey(a.cols.names[c]), k)
			}
		}
	}
	m := n
	if sel != nil {
		m = len(sel)
		if m == 0 {
			return nil
		}
	}
	ch := edges.Chunk{FirstRow: first, Rows: rows}
	var err error
	if ch.Src, err = a.keys(&cols[roleSrc], sel, m); err != nil {
		return err
	}
	if ch.Dst, err = a.keys(&cols[roleDst], sel, m); err != nil {
		return err
	}
	if len(cols) > roleWeight {
		if ch.Weight, err = a.weights(&cols[roleWeight], sel, m, first); err != nil {
			return err
		}
	}
	if left, err := a.checkUTF8(&ch); err != nil || !left {
		return err
	}
	a.t.Chunks = append(a.t.Chunks, ch)
	return nil
}

// checkNulls checks a column's validity bitmap (and its dictionary's)
// against its null count: it covers the rows, and marks as many of them
// null as the count says (one pass over the bitmap; a bit flipped in it
// would make a row null, or a null row a key).
func (a *Appender) checkNulls(c *rawCol) error {
	if problem := nullsProblem(c); problem != "" {
		return a.corrupt(c.role, "the "+problem)
	}
	if c.dict != nil {
		if problem := nullsProblem(c.dict); problem != "" {
			return a.corrupt(c.role, "the dictionary's "+problem)
		}
	}
	return nil
}

// nullsProblem says what is wrong with c's validity bitmap, or "".
func nullsProblem(c *rawCol) string {
	switch {
	case c.nulls <= 0:
		return ""
	case c.valid == nil:
		return fmt.Sprintf("null count is %d, but there is no validity bitmap", c.nulls)
	case len(c.valid)*8 < c.off+c.n:
		return fmt.Sprintf("validity bitmap has %d bits for %d values", len(c.valid)*8, c.off+c.n)
	}
	if nulls := c.n - bitutil.CountSetBits(c.valid, c.off, c.n); nulls != c.nulls {
		return fmt.Sprintf("validity bitmap marks %d values null where the null count says %d", nulls, c.nulls)
	}
	return ""
}

// corrupt reports a column whose buffers do not hold what its type says.
func (a *Appender) corrupt(role int, detail string) error {
	return &usererr.Error{Kind: usererr.Input, File: a.name, Column: a.cols.names[role], Row: -1,
		Problem: "the Arrow data is corrupt: " + detail,
		Fix:     "re-export the input; it is damaged or was cut short"}
}

// mayAlias says whether a chunk may point into c's buffers: those of a
// mapped file, of a message body unless the Appender copies it, or of a
// record unless the Appender copies records (they are in memory other than
// Options.Alloc's).
func (a *Appender) mayAlias(c *rawCol) bool {
	if c.arr == nil {
		return a.body == nil || !a.copyBody
	}
	return !a.copyRecords
}

// hold keeps c's buffers alive as long as the table: the array is retained
// once per batch; a message body is counted once (the chunks' slices keep
// it).
func (a *Appender) hold(c *rawCol) {
	if c.arr == nil && a.body != nil {
		if !a.bodyHeld {
			a.bodyHeld = true
			a.bytes += int64(len(a.body))
		}
		return
	}
	if c.arr == nil {
		a.mapAliased = true
		return
	}
	if a.held[c.role] {
		return
	}
	a.held[c.role] = true
	arr := c.arr
	arr.Retain()
	a.t.OnRelease(arr.Release)
	for _, b := range arr.Data().Buffers() {
		if b != nil {
			a.bytes += int64(b.Len())
		}
	}
}
