package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"

	"github.com/gpipe/gpipe/internal/usererr"
)

// parquetEncoder checks the options and the schema and returns the
// constructor of a Parquet encoder: row groups of rowGroup rows (collected
// across records), the codec named by compression (zstd by default),
// statistics on, and the Arrow schema stored in the file so that readers get
// the exact Arrow types back (uint32, large_utf8, dictionaries).
func parquetEncoder(schema *arrow.Schema, rowGroup int64, compression string) (func(io.Writer) (encoder, error), error) {
	var codec compress.Compression
	switch strings.ToLower(compression) {
	case "", CompressionZstd:
		codec = compress.Codecs.Zstd
	case CompressionSnappy:
		codec = compress.Codecs.Snappy
	case CompressionGzip:
		codec = compress.Codecs.Gzip
	case CompressionNone, "uncompressed":
		codec = compress.Codecs.Uncompressed
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown Parquet compression %q", compression), "use zstd, snappy, gzip or none")
	}
	props := parquet.NewWriterProperties(
		parquet.WithAllocator(memory.DefaultAllocator),
		parquet.WithCompression(codec),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(rowGroup),
	)
	arrowProps := pqarrow.NewArrowWriterProperties(
		pqarrow.WithAllocator(memory.DefaultAllocator),
		pqarrow.WithStoreSchema(),
	)
	if _, err := pqarrow.ToParquet(schema, props, arrowProps); err != nil {
		return nil, usererr.New(usererr.Usage, "cannot write this table as Parquet: "+err.Error(), "write it as an Arrow IPC file (.arrow) instead")
	}
	return func(w io.Writer) (encoder, error) {
		fw, err := pqarrow.NewFileWriter(schema, w, props, arrowProps)
		if err != nil {
			return nil, err
		}
		return &parquetEnc{fw: fw}, nil
	}, nil
}

// parquetEnc writes buffered row groups, so that records smaller than a row
// group fill one before the next starts.
type parquetEnc struct{ fw *pqarrow.FileWriter }

func (e *parquetEnc) write(rec arrow.Record) error {
	if rec.NumRows() == 0 {
		return nil
	}
	return e.fw.WriteBuffered(rec)
}

func (e *parquetEnc) close() error { return e.fw.Close() }
