package sink

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go/format"

	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/sink/internal/pqwrite"
)

// parquetEncoder checks the options and the schema and returns the
// constructor of a Parquet encoder: row groups of rowGroup rows (collected
// across records), the codec named by compression (zstd by default),
// statistics on, and the Arrow schema stored in the file so that readers get
// the exact Arrow types back (uint32, large_utf8, dictionaries).
//
// Tables of flat numeric, string and binary columns (and dictionaries of
// them: every table gpipe makes) go to package pqwrite, which encodes row
// groups on all cores; others (nested types, booleans, timestamps,
// decimals) to Arrow's writer, one row group after another.
func parquetEncoder(schema *arrow.Schema, rowGroup int64, compression string) (func(io.Writer) (encoder, error), error) {
	var codec compress.Compression
	var pqCodec format.CompressionCodec
	switch strings.ToLower(compression) {
	case "", CompressionZstd:
		codec, pqCodec = compress.Codecs.Zstd, format.Zstd
	case CompressionSnappy:
		codec, pqCodec = compress.Codecs.Snappy, format.Snappy
	case CompressionGzip:
		codec, pqCodec = compress.Codecs.Gzip, format.Gzip
	case CompressionNone, "uncompressed":
		codec, pqCodec = compress.Codecs.Uncompressed, format.Uncompressed
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("unknown Parquet compression %q", compression), "use zstd, snappy, gzip or none")
	}
	if pqwrite.Supported(schema) == nil {
		return func(w io.Writer) (encoder, error) {
			pw, err := pqwrite.NewWriter(w, schema, pqwrite.Options{RowGroupRows: rowGroup, Codec: pqCodec})
			if err != nil {
				return nil, err
			}
			return &parallelParquetEnc{w: pw}, nil
		}, nil
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

// parallelParquetEnc writes through package pqwrite, which keeps each
// record (retained) until its row group is encoded and written.
type parallelParquetEnc struct{ w *pqwrite.Writer }

func (e *parallelParquetEnc) write(rec arrow.RecordBatch) error { return e.w.Write(rec) }

func (e *parallelParquetEnc) close() error { return e.w.Close() }

func (e *parallelParquetEnc) abort() { e.w.Abort() }

// parquetEnc writes buffered row groups with Arrow's writer, so that
// records smaller than a row group fill one before the next starts.
type parquetEnc struct{ fw *pqarrow.FileWriter }

func (e *parquetEnc) write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	return e.fw.WriteBuffered(rec)
}

func (e *parquetEnc) close() error { return e.fw.Close() }

func (e *parquetEnc) abort() {}
