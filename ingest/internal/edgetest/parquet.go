package edgetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	pq "github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ParquetWrite is how a table is written.
type ParquetWrite struct {
	Codec        pqcompress.Compression
	Dict         bool
	V2           bool
	RowGroupRows int64
	PageSize     int64
	DictPageSize int64 // 0: the writer's default
}

// DefaultParquetWrite writes small row groups and pages, dictionary-encoded,
// compressed with snappy.
var DefaultParquetWrite = ParquetWrite{Codec: pqcompress.Codecs.Snappy, Dict: true, RowGroupRows: 400, PageSize: 1024}

// WriteParquet writes the table to dir/name with pqarrow and returns the path.
func WriteParquet(t testing.TB, dir, name string, tbl arrow.Table, w ParquetWrite) string {
	t.Helper()
	props := []pq.WriterProperty{
		pq.WithCompression(w.Codec),
		pq.WithDictionaryDefault(w.Dict),
		pq.WithMaxRowGroupLength(w.RowGroupRows),
		pq.WithDataPageSize(w.PageSize),
		pq.WithBatchSize(128),
	}
	if w.V2 {
		props = append(props, pq.WithDataPageVersion(pq.DataPageV2))
	}
	if w.DictPageSize > 0 {
		props = append(props, pq.WithDictionaryPageSizeLimit(w.DictPageSize))
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// WriteTable closes f.
	err = pqarrow.WriteTable(tbl, f, w.RowGroupRows, pq.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatalf("writing %s: %v", name, err)
	}
	return path
}

// With is w with row groups of rowGroupRows rows.
func (w ParquetWrite) With(rowGroupRows int64) ParquetWrite {
	w.RowGroupRows = rowGroupRows
	return w
}
