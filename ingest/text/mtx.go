package text

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/input"
	"github.com/gpipe/gpipe/ingest/internal/sniff"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Reading Matrix Market coordinate files (the SuiteSparse Matrix
// Collection's format): a banner line
//
//	%%MatrixMarket matrix coordinate real|integer|pattern general|symmetric|skew-symmetric
//
// then comment lines (%), a size line "M N NNZ", and NNZ entries "i j [v]"
// with 1-based indices, which become edges i → j with weight v (keys as
// written). A symmetric matrix stores one triangle: each off-diagonal entry
// is read in both directions, and skew-symmetric ones negate the mirrored
// value. The entries are parsed by the edge list parser (text.go).

const mtxFixHeader = "the first line of a Matrix Market file is: %%MatrixMarket matrix coordinate real|integer|pattern general|symmetric|skew-symmetric"

// mtxEntryForm is what an entry of n fields holds.
func mtxEntryForm(n int) string {
	if n == 2 {
		return "row column"
	}
	return "row column value"
}

// mtxHeader is what the banner and size line say.
type mtxHeader struct {
	field    string // real, integer, pattern
	symmetry string // general, symmetric, skew-symmetric
	rows     int64
	cols     int64
	nnz      int64
	sizeLine int64
	body     []byte // the input after the size line
	bodyLine int64  // line number of body[0]
}

// parseMTXHeader reads the banner, comments and size line.
func parseMTXHeader(name string, data []byte) (*mtxHeader, error) {
	line, rest := mtxLine(data)
	if len(line) > input.MaxLine {
		return nil, input.ErrLongLine(name, 1, "a Matrix Market file")
	}
	fields := strings.Fields(strings.ToLower(string(line)))
	if len(fields) == 0 || fields[0] != "%%matrixmarket" {
		return nil, usererr.AtLine(name, 1, "not a Matrix Market file: the first line is not a %%MatrixMarket banner", mtxFixHeader)
	}
	if len(fields) != 5 {
		return nil, usererr.AtLine(name, 1, fmt.Sprintf("the banner has %d words where a Matrix Market banner has 5", len(fields)), mtxFixHeader)
	}
	h := &mtxHeader{field: fields[3], symmetry: fields[4]}
	if fields[1] != "matrix" {
		return nil, usererr.AtLine(name, 1, fmt.Sprintf("the file holds a %s, not a matrix", echo.Quote(fields[1])), "gpipe reads Matrix Market matrices (coordinate format) as edge lists")
	}
	switch fields[2] {
	case "coordinate":
	case "array":
		return nil, usererr.AtLine(name, 1, "the matrix is in dense array format, which is not an edge list",
			"convert it to coordinate format (scipy: scipy.io.mmwrite(path, scipy.sparse.coo_matrix(m)))")
	default:
		return nil, usererr.AtLine(name, 1, fmt.Sprintf("unknown Matrix Market format %s", echo.Quote(fields[2])), mtxFixHeader)
	}
	switch h.field {
	case "real", "double", "integer", "pattern":
	case "complex":
		return nil, usererr.AtLine(name, 1, "the matrix has complex values, which cannot be edge weights",
			"convert it to real values, or to pattern to drop the values (edit the banner and the entries)")
	default:
		return nil, usererr.AtLine(name, 1, fmt.Sprintf("unknown Matrix Market field type %s", echo.Quote(h.field)), mtxFixHeader)
	}
	switch h.symmetry {
	case "general", "symmetric":
	case "hermitian": // with real values: symmetric
		h.symmetry = "symmetric"
	case "skew-symmetric":
		if h.field == "pattern" {
			return nil, usererr.AtLine(name, 1, "a pattern matrix cannot be skew-symmetric (it has no values to negate)", "make it symmetric or general")
		}
	default:
		return nil, usererr.AtLine(name, 1, fmt.Sprintf("unknown Matrix Market symmetry %s", echo.Quote(h.symmetry)), mtxFixHeader)
	}
	// Comments and blank lines, then the size line.
	n := int64(1)
	for {
		if len(rest) == 0 {
			return nil, usererr.AtLine(name, n+1, "the file ends before the size line (rows columns entries)", "the file is cut short; download or copy it again")
		}
		line, rest = mtxLine(rest)
		n++
		if len(line) > input.MaxLine {
			return nil, input.ErrLongLine(name, n, "a Matrix Market file")
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '%' {
			continue
		}
		size := strings.Fields(string(t))
		if len(size) != 3 {
			return nil, usererr.AtLine(name, n, fmt.Sprintf("the size line has %d numbers where a coordinate matrix's has 3 (rows columns entries)", len(size)),
				"write the size line as: rows columns entries")
		}
		var v [3]int64
		for i, s := range size {
			x, err := strconv.ParseInt(s, 10, 64)
			if err != nil || x < 0 {
				return nil, usererr.AtLine(name, n, fmt.Sprintf("the size line's %s %s is not a count", []string{"row count", "column count", "entry count"}[i], echo.Quote(s)),
					"write the size line as: rows columns entries")
			}
			v[i] = x
		}
		h.rows, h.cols, h.nnz, h.sizeLine = v[0], v[1], v[2], n
		break
	}
	if h.symmetry != "general" && h.rows != h.cols {
		return nil, usererr.AtLine(name, h.sizeLine, fmt.Sprintf("a %s matrix must be square, but it is %d×%d", h.symmetry, h.rows, h.cols), "fix the size line or the banner")
	}
	h.body, h.bodyLine = rest, n+1
	return h, nil
}

// mtxLine splits off data's first line (without its newline).
func mtxLine(data []byte) (line, rest []byte) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i], data[i+1:]
	}
	return data, nil
}

// ReadMatrixMarket reads the Matrix Market file r holds, named name in
// messages.
func ReadMatrixMarket(ctx context.Context, name string, r io.Reader, opts edges.Options) (*edges.Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts.Columns = opts.Columns.WithDefaults()
	data, done, err := inputBytes(ctx, name, "a Matrix Market file", r)
	if err != nil {
		return nil, err
	}
	defer done()
	skip, err := sniff.TextStart(name, "a Matrix Market file", data[:min(len(data), sniff.Len)])
	if err != nil {
		return nil, err
	}
	h, err := parseMTXHeader(name, data[skip:])
	if err != nil {
		return nil, err
	}
	cfg := config{name: name, opts: opts, mtx: true, fields: 3, rows: h.rows, cols: h.cols, firstLine: h.bodyLine}
	switch h.field {
	case "pattern":
		cfg.fields = 2
	case "integer":
		cfg.intValues = true
	}
	switch h.symmetry {
	case "symmetric":
		cfg.mirror = 1
	case "skew-symmetric":
		cfg.mirror = -1
	}
	t, err := parseEdgeLines(ctx, h.body, cfg)
	if err != nil {
		return nil, err
	}
	t.Mirror = cfg.mirror
	if t.RowsRead != h.nnz {
		t.Release()
		if t.RowsRead < h.nnz {
			// The file's last line: the size line's, or the body's.
			end := h.bodyLine - 1 + int64(bytes.Count(h.body, []byte{'\n'}))
			if len(h.body) > 0 && h.body[len(h.body)-1] != '\n' {
				end++
			}
			return nil, usererr.AtLine(name, end, fmt.Sprintf("the file ends after %d of the %d entries its size line (line %d) announces", t.RowsRead, h.nnz, h.sizeLine),
				"the file is cut short; download or copy it again (or fix the size line)")
		}
		return nil, usererr.AtLine(name, mtxLineOfEntry(h.body, h.bodyLine, h.nnz),
			fmt.Sprintf("entry %d is beyond the %d entries the size line (line %d) announces", h.nnz+1, h.nnz, h.sizeLine),
			"fix the size line's entry count, or remove the extra entries")
	}
	return t, nil
}

// mtxLineOfEntry is the line number of entry k (0-based) of body.
func mtxLineOfEntry(body []byte, line, k int64) int64 {
	for len(body) > 0 {
		var l []byte
		l, body = mtxLine(body)
		if t := bytes.TrimLeft(l, " \t\r\v\f"); len(t) > 0 && t[0] != '%' && t[0] != '#' {
			if k == 0 {
				return line
			}
			k--
		}
		line++
	}
	return line
}
