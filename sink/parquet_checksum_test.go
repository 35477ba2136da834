package sink

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// pageSpan is one page of a Parquet file, as its footer and page headers
// place it.
type pageSpan struct {
	group, col, page int    // row group, column chunk, page within the chunk
	column           string // the column's name
	typ              format.PageType
	header, body     int64 // offsets of the page header and of its body
	size             int64 // bytes of the body
	crc              int32 // the header's CRC field, 0 when absent
}

// pagesOf lists every page of every column chunk of a Parquet file.
func pagesOf(t *testing.T, data []byte) []pageSpan {
	t.Helper()
	n := int64(binary.LittleEndian.Uint32(data[len(data)-8:]))
	var meta format.FileMetaData
	proto := new(thrift.CompactProtocol)
	if err := thrift.Unmarshal(proto, data[int64(len(data))-8-n:len(data)-8], &meta); err != nil {
		t.Fatal(err)
	}
	var pages []pageSpan
	for g, rg := range meta.RowGroups {
		for c, cc := range rg.Columns {
			md := cc.MetaData
			at := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < at {
				at = md.DictionaryPageOffset
			}
			end := at + md.TotalCompressedSize
			for p := 0; at < end; p++ {
				var h format.PageHeader
				r := proto.NewReaderFromBytes(data[at:end])
				if err := thrift.NewDecoder(r).Decode(&h); err != nil {
					t.Fatalf("row group %d column %d page %d: %v", g, c, p, err)
				}
				body := at + int64(r.BytesRead())
				pages = append(pages, pageSpan{group: g, col: c, page: p, column: md.PathInSchema[0], typ: h.Type,
					header: at, body: body, size: int64(h.CompressedPageSize), crc: h.CRC})
				at = body + int64(h.CompressedPageSize)
			}
		}
	}
	return pages
}

// checksumTables are edge tables as gpipe writes them (gen's, and results
// read as edges by a later stage): int64 keys in dictionary chunks, a
// nullable float64 weight in plain pages (two a chunk), string keys plain
// and in a dictionary.
func checksumTables() map[string][]pqCol {
	ints := []pqCol{
		{arrow.Field{Name: "src", Type: arrow.PrimitiveTypes.Int64}, func(i int) any { return int64(mix(1, i) % 5000) }},
		{arrow.Field{Name: "dst", Type: arrow.PrimitiveTypes.Int64}, func(i int) any { return int64(mix(2, i) % 5000) }},
		{arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, func(i int) any { return float64(mix(3, i)%1e9) / 7 }},
	}
	strs := []pqCol{
		{arrow.Field{Name: "src", Type: arrow.BinaryTypes.String}, func(i int) any { return fmt.Sprintf("v%d", mix(4, i)) }},
		{arrow.Field{Name: "dst", Type: arrow.BinaryTypes.LargeString}, func(i int) any { return fmt.Sprintf("w%d", mix(5, i)%300) }},
		{arrow.Field{Name: "weight", Type: arrow.PrimitiveTypes.Float32}, func(i int) any { return float32(mix(6, i)%255 + 1) }},
	}
	return map[string][]pqCol{"int64 keys": ints, "string keys": strs}
}

// TestParquetPageChecksums: every page gpipe's writer writes, dictionary
// and data pages, carries the CRC-32 of its bytes; a byte changed anywhere
// in any page's body is refused by gpipe's reader (an input error naming
// the column, the row group and the page) and by parquet-go's, which
// verifies page checksums too. (Arrow Go v18.8.0 reads the CRC fields but
// does not verify them; pyarrow does, with page_checksum_verification:
// scripts/parquet-readback/pyarrow-check.py.)
func TestParquetPageChecksums(t *testing.T) {
	for name, cols := range checksumTables() {
		t.Run(name, func(t *testing.T) {
			const rows = 300000
			rec := buildRecord(memory.DefaultAllocator, cols, rows)
			defer rec.Release()
			dir := t.TempDir()
			path := filepath.Join(dir, "edges.parquet")
			if err := WriteRecord(context.Background(), path, rec, Options{BatchRows: 200000}); err != nil {
				t.Fatal(err)
			}
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pages := pagesOf(t, good)
			kinds := map[format.PageType]int{}
			for _, p := range pages {
				kinds[p.typ]++
				if want := int32(crc32.ChecksumIEEE(good[p.body : p.body+p.size])); p.crc != want || p.crc == 0 {
					t.Fatalf("row group %d column %s page %d: CRC %#x, want %#x", p.group, p.column, p.page, p.crc, want)
				}
			}
			if kinds[format.DictionaryPage] == 0 || kinds[format.DataPage] <= len(cols)*2 {
				t.Fatalf("pages of each type: %v; the test needs dictionaries and chunks of several pages", kinds)
			}
			readEdges(t, path, nil)

			bad := filepath.Join(dir, "bad.parquet")
			for _, p := range pages {
				for _, at := range []int64{p.body, p.body + p.size/2, p.body + p.size - 1} {
					data := bytes.Clone(good)
					data[at] ^= 0x10
					if err := os.WriteFile(bad, data, 0o666); err != nil {
						t.Fatal(err)
					}
					where := fmt.Sprintf("byte %d of page %d (row group %d, column %s)", at, p.page, p.group, p.column)
					readEdges(t, bad, func(err error) {
						var ue *usererr.Error
						want := fmt.Sprintf("page %d of row group %d (a ", p.page, p.group)
						if !errors.As(err, &ue) || ue.Kind != usererr.Input || ue.File != bad || ue.Column != p.column ||
							!strings.Contains(ue.Problem, want) || !strings.Contains(ue.Problem, "CRC-32") || !strings.Contains(ue.Fix, "re-export") {
							t.Fatalf("%s changed: %v, want an input error about %q", where, err, want)
						}
					})
					if err := readPagesParquetGo(data, p.group, p.col); !errors.Is(err, pq.ErrCorrupted) {
						t.Fatalf("%s changed: parquet-go read it (%v)", where, err)
					}
				}
			}
		})
	}
}

// readEdges reads path as an edge table, weights included; check gets the
// error, or with check nil the read must succeed.
func readEdges(t *testing.T, path string, check func(error)) {
	t.Helper()
	tbl, err := ingest.Open(context.Background(), path, nil, edges.Options{Columns: edges.Columns{ReadWeight: true}})
	if err == nil {
		tbl.Release()
	}
	switch {
	case check != nil && err == nil:
		t.Fatalf("%s read without an error", path)
	case check != nil:
		check(err)
	case err != nil:
		t.Fatal(err)
	}
}

// readPagesParquetGo reads every page of column chunk col of row group g
// with parquet-go, which checks the pages' CRCs as it reads them.
func readPagesParquetGo(data []byte, g, col int) error {
	pf, err := pq.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	pages := pf.RowGroups()[g].ColumnChunks()[col].Pages()
	defer pages.Close()
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		pq.Release(p)
	}
}
