package edges

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// A dataset (a directory, a glob or an object store prefix of part files)
// is read as one table whose rows are numbered across its files in order;
// Table.Parts says where each file's rows start, so that a later stage's
// error about a row (a negative weight) names the file and its row there.

// Part is one file of a table read from several.
type Part struct {
	Name     string   // the file, as messages name it
	FirstRow int64    // the table's number of the file's first row
	Rows     int64    // the file's rows, skipped ones included
	Lines    *LineMap // a text file's lines by its own rows; nil for others
}

// PartOf is the part that holds row of the table and the row's number in
// it; nil for a table read from one file.
func (t *Table) PartOf(row int64) (*Part, int64) {
	if len(t.Parts) == 0 || row < 0 {
		return nil, row
	}
	i := sort.Search(len(t.Parts), func(i int) bool { return t.Parts[i].FirstRow > row }) - 1
	if i < 0 {
		return nil, row
	}
	return &t.Parts[i], row - t.Parts[i].FirstRow
}

// Locate rewrites an error about a row of the table (a *usererr.Error
// naming the table and a row) to name the file of a dataset that holds the
// row, and the row's number (and line) there. Other errors are returned as
// they are.
func (t *Table) Locate(err error) error {
	var e *usererr.Error
	if len(t.Parts) == 0 || !errors.As(err, &e) || e.File != t.Name || e.Row < 0 {
		return err
	}
	p, row := t.PartOf(e.Row)
	if p == nil {
		return err
	}
	e.File, e.Row = p.Name, row
	if p.Lines != nil {
		e.Line = p.Lines.Line(row)
	}
	return err
}

// Concat makes one table named name of the tables of a dataset's files, in
// order, taking their chunks and what they hold (the parts are spent; the
// table releases them). They must agree on the key type and on having
// weights: the first that does not is the error, naming it and the first
// file. On an error the parts are released.
func Concat(name string, parts []*Table) (*Table, error) {
	release := func() {
		for _, p := range parts {
			p.Release()
		}
	}
	if len(parts) == 0 {
		return nil, usererr.Newf(usererr.Internal, "edges: a dataset of no files")
	}
	first := parts[0]
	for _, p := range parts[1:] {
		if err := CheckPartAgrees(first.Name, p.Name, first.Columns, first.KeyType, p.KeyType, first.HasWeight, p.HasWeight); err != nil {
			release()
			return nil, err
		}
	}
	t := &Table{Name: name, Columns: first.Columns, KeyType: first.KeyType, HasWeight: first.HasWeight,
		KeyArrowType: first.KeyArrowType, Skipped: Skips{}}
	for _, p := range parts {
		if t.KeyArrowType != nil && p.KeyArrowType != nil && !arrow.TypeEqual(t.KeyArrowType, p.KeyArrowType) {
			// utf8 beside large_utf8 or a dictionary: the values are one type.
			t.KeyArrowType = t.KeyType.ArrowType()
		}
		base := t.RowsRead
		t.Parts = append(t.Parts, Part{Name: p.Name, FirstRow: base, Rows: p.RowsRead, Lines: p.Lines})
		for _, c := range p.Chunks {
			c.FirstRow += base
			for i := range c.Rows {
				c.Rows[i] += base
			}
			t.Chunks = append(t.Chunks, c)
		}
		t.RowsRead += p.RowsRead
		for reason, n := range p.Skipped {
			t.Skipped.Add(reason, n)
		}
		t.OnRelease(p.Release)
	}
	return t, nil
}

// CheckPartAgrees reports a file of a dataset whose key type, or whose
// having weights, differs from the first file's.
func CheckPartAgrees(firstName, name string, cols Columns, firstKey, key KeyType, firstWeight, weight bool) error {
	cols = cols.WithDefaults()
	switch {
	case firstKey != key:
		return &usererr.Error{Kind: usererr.Input, File: name, Column: cols.Src, Row: -1,
			Problem: fmt.Sprintf("the vertex keys are %s here but %s in %s, the dataset's first file: the files of a dataset must have one schema", key, firstKey, firstName),
			Fix:     "rewrite the files with one key type (cast the key columns), or move the odd file out of the dataset"}
	case firstWeight != weight:
		has, hasNot := name, firstName
		if firstWeight {
			has, hasNot = firstName, name
		}
		return &usererr.Error{Kind: usererr.Input, File: name, Row: -1,
			Problem: fmt.Sprintf("%s has a weight column %s and %s has none: the files of a dataset must have one schema", has, echo.Quote(cols.Weight), hasNot),
			Fix:     "give every file the weight column, or move the odd file out of the dataset"}
	}
	return nil
}
