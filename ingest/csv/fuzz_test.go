package csv

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// ---- CSV ----

// csvRef reads a CSV edge table record by record with encoding/csv.
func csvRef(data []byte, readWeight, skip bool) *edgetest.Want {
	w := &edgetest.Want{KeyType: edges.KeyInt64}
	data, ok := edgetest.TextStart(w, data, "CSV text")
	if !ok {
		return w
	}
	r := csv.NewReader(bytes.NewReader(data))
	parseErr := func(err error) {
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			panic(err)
		}
		// An unbalanced quote is named where its record starts.
		if errors.Is(pe.Err, csv.ErrQuote) {
			w.Fail(int64(pe.StartLine), -1, "", "malformed CSV: ")
			return
		}
		w.Fail(int64(pe.Line), -1, "", "malformed CSV: "+pe.Err.Error())
	}
	header, err := r.Read()
	if err == io.EOF {
		w.Fail(0, -1, "", "the CSV file is empty")
		return w
	}
	if err != nil {
		parseErr(err)
		return w
	}
	header = append([]string(nil), header...)
	col := func(name string) int {
		for i, h := range header {
			if h == name {
				return i
			}
		}
		return -1
	}
	si, di, wi := col("src"), col("dst"), -1
	if readWeight {
		wi = col("weight")
	}
	switch {
	case si < 0 && looksBinary(strings.Join(header, ",")):
		w.Fail(0, -1, "", "does not look like CSV text")
		return w
	case si < 0:
		w.Fail(0, -1, "", `no source column "src"`)
		return w
	case di < 0:
		w.Fail(0, -1, "", `no destination column "dst"`)
		return w
	}
	// An edge column's name must be one column's.
	for _, c := range []string{"src", "dst", "weight"} {
		n := 0
		for _, h := range header {
			if h == c {
				n++
			}
		}
		if n > 1 && (c != "weight" || readWeight) {
			w.Fail(0, -1, c, fmt.Sprintf("%d columns are named %q", n, c))
			return w
		}
	}
	w.HasWeight = wi >= 0
	for row := int64(0); ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			w.Rows = row
			break
		}
		if err != nil {
			parseErr(err)
			return w
		}
		line, _ := r.FieldPos(0)
		if rec[si] == "" || rec[di] == "" {
			c := "src"
			if rec[si] != "" {
				c = "dst"
			}
			if !skip {
				w.Fail(int64(line), row, c, "empty (null) vertex key")
				return w
			}
			w.Skipped++
			continue
		}
		if k := edgetest.FirstBadUTF8(rec[si], rec[di]); k >= 0 {
			if !skip {
				w.Fail(int64(line), row, []string{"src", "dst"}[k], fmt.Sprintf("vertex key %s is not valid UTF-8", edgetest.QuotedToken([]string{rec[si], rec[di]}[k])))
				return w
			}
			w.Skipped++
			continue
		}
		e := edgetest.Edge{Row: row, Src: rec[si], Dst: rec[di]}
		if wi >= 0 {
			f := rec[wi]
			v, ok := edgetest.ParseWeight(f)
			switch {
			case f == "" && !skip:
				w.Fail(int64(line), row, "weight", "empty (null) weight")
				return w
			case !ok && !skip:
				w.Fail(int64(line), row, "weight", fmt.Sprintf("weight %s is not a number", edgetest.QuotedToken(f)))
				return w
			case !ok:
				w.Skipped++
				continue
			}
			e.W = v
		}
		w.Edges = append(w.Edges, e)
	}
	// Keys are integers when every key kept is.
	for _, e := range w.Edges {
		for _, k := range []any{e.Src, e.Dst} {
			if _, err := strconv.ParseInt(k.(string), 10, 64); err != nil {
				w.KeyType = edges.KeyString
			}
		}
	}
	if w.KeyType == edges.KeyInt64 {
		for i := range w.Edges {
			e := &w.Edges[i]
			e.Src, e.Dst = edgetest.ParseKey(e.Src.(string), edges.KeyInt64), edgetest.ParseKey(e.Dst.(string), edges.KeyInt64)
		}
	}
	return w
}

var seeds = []string{
	"src,dst\n1,2\n2,3\n",
	"src,dst,weight\n1,2,0.5\n2,3,1e3\n3,1,-4\n",
	"\ufeffsrc,dst,weight\r\n1,2,1\r\n2,3,2\r\n",
	"\ufeff\"src\",\"dst\"\n1,2\n",
	"\xff\xfes\x00r\x00c\x00,\x00d\x00s\x00t\x00\n\x00",
	"PAR1\x15\x04\x15\xe0\x1a\x15\xf8\x05L\x15\xac\x03\x15\x00\x12\x00\x00(",
	"id,dst,src,weight,note\n7,b,a,1,x\n8,c,b,2,\"y, z\"\n",
	"src,dst\n\"a,1\",\"b\"\"q\"\n\"multi\nline\",c\n",
	"src,dst,weight\n1,,1\n,2,1\n3,4,\n5,6,x\n7,8,9\n",
	"src,dst\n1,2,3\n",
	"src,dst\n1\n",
	"a,b\n1,2\n",
	"src,dst\n1,2\n\"unterminated,3\n",
	"src,dst\n1,2\n\"2,3\n4,5\n",
	"src,dst\n1,2\n\"2,3\n4,\"5\"\n6,7\n",
	"src,dst\n9223372036854775807,-9223372036854775808\n9223372036854775808,1\n",
	"src,dst,weight\n1,2,1e400\n2,3,NaN\n3,4,-Inf\n",
	"src,dst\n01,+2\n\n",
	"",
}

func FuzzCSV(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	path := filepath.Join(f.TempDir(), "edges.csv")
	f.Fuzz(func(t *testing.T, data []byte) {
		edgetest.WriteFile(t, path, data)
		for _, o := range edgetest.ReadOptions {
			want := csvRef(data, o.ReadWeight, o.Skip)
			opts := edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}, SkipInvalid: o.Skip, Header: edges.HeaderYes}
			tbl := edgetest.ReadChecked(t, "file "+o.Name, path, want, func(opts edges.Options) (*edges.Table, error) {
				return edgetest.ReadFile(path, Read, opts)
			}, opts)
			if tbl == nil {
				continue
			}
			// Written back out with encoding/csv and read again.
			written := edgetest.Edges(t, tbl)
			var b bytes.Buffer
			cw := csv.NewWriter(&b)
			header := []string{"src", "dst"}
			if tbl.HasWeight {
				header = append(header, "weight")
			}
			_ = cw.Write(header)
			for _, e := range written {
				rec := []string{edgetest.KeyString(e.Src), edgetest.KeyString(e.Dst)}
				if tbl.HasWeight {
					rec = append(rec, strconv.FormatFloat(e.W, 'g', -1, 64))
				}
				_ = cw.Write(rec)
			}
			cw.Flush()
			if err := cw.Error(); err != nil {
				t.Fatal(err)
			}
			back, err := Read(context.Background(), path, bytes.NewReader(b.Bytes()), edges.Options{Columns: edges.Columns{ReadWeight: o.ReadWeight}})
			edgetest.RoundTrip(t, "round trip "+o.Name, written, tbl.KeyType, true, back, err)
			tbl.Release()
		}
	})
}
