package pqwrite

import (
	"bytes"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// kind is how a column's values are held in Arrow and encoded in Parquet.
type kind uint8

const (
	kindInt32   kind = iota + 1 // INT32
	kindUint32                  // INT32 annotated INTEGER(32, unsigned)
	kindInt64                   // INT64
	kindUint64                  // INT64 annotated INTEGER(64, unsigned)
	kindFloat32                 // FLOAT
	kindFloat64                 // DOUBLE
	kindBytes                   // BYTE_ARRAY: string, large_string, binary, large_binary
)

// width is the size in bytes of a fixed-width value, 0 for byte arrays.
func (k kind) width() int {
	switch k {
	case kindInt32, kindUint32, kindFloat32:
		return 4
	case kindInt64, kindUint64, kindFloat64:
		return 8
	}
	return 0
}

// physical is the Parquet physical type of k.
func (k kind) physical() format.Type {
	switch k {
	case kindInt32, kindUint32:
		return format.Int32
	case kindInt64, kindUint64:
		return format.Int64
	case kindFloat32:
		return format.Float
	case kindFloat64:
		return format.Double
	}
	return format.ByteArray
}

// signedOrder says whether k's values sort as signed numbers, so that the
// deprecated min and max statistics (always signed) may be written too.
func (k kind) signedOrder() bool {
	switch k {
	case kindInt32, kindInt64, kindFloat32, kindFloat64:
		return true
	}
	return false
}

// column is one leaf column of the file: one top-level Arrow field.
type column struct {
	name     string
	kind     kind
	utf8     bool // a string, annotated STRING
	optional bool // the field is nullable
	// dict is the field's type where it is an Arrow dictionary: its values
	// are decoded and encoded again (with a Parquet dictionary where that
	// pays), since row groups may hold slices with different dictionaries.
	dict *arrow.DictionaryType
}

// kindOf is the kind of a value type the writer encodes itself.
func kindOf(dt arrow.DataType) (kind, bool, bool) {
	switch dt.ID() {
	case arrow.INT32:
		return kindInt32, false, true
	case arrow.UINT32:
		return kindUint32, false, true
	case arrow.INT64:
		return kindInt64, false, true
	case arrow.UINT64:
		return kindUint64, false, true
	case arrow.FLOAT32:
		return kindFloat32, false, true
	case arrow.FLOAT64:
		return kindFloat64, false, true
	case arrow.STRING, arrow.LARGE_STRING:
		return kindBytes, true, true
	case arrow.BINARY, arrow.LARGE_BINARY:
		return kindBytes, false, true
	}
	return 0, false, false
}

// columnsOf is the leaf columns of schema, or an error naming the first
// field of a type the writer does not encode.
func columnsOf(schema *arrow.Schema) ([]column, error) {
	cols := make([]column, schema.NumFields())
	for i, f := range schema.Fields() {
		c := column{name: f.Name, optional: f.Nullable}
		vt := f.Type
		if dt, ok := f.Type.(*arrow.DictionaryType); ok {
			c.dict, vt = dt, dt.ValueType
		}
		var ok bool
		if c.kind, c.utf8, ok = kindOf(vt); !ok {
			return nil, fmt.Errorf("column %q has type %s", f.Name, f.Type)
		}
		cols[i] = c
	}
	return cols, nil
}

// Supported says whether the writer encodes every column of schema: flat
// columns of int32, int64, uint32, uint64, float32, float64, string,
// large_string, binary, large_binary, and dictionaries of these. Other
// schemas (nested types, booleans, timestamps, decimals) get an error that
// names the first such column.
func Supported(schema *arrow.Schema) error {
	_, err := columnsOf(schema)
	return err
}

// schemaElements is the file's Parquet schema: the root, then one element
// per column, annotated as Arrow's own Parquet writer annotates them.
func schemaElements(cols []column) []format.SchemaElement {
	els := make([]format.SchemaElement, 0, len(cols)+1)
	els = append(els, format.SchemaElement{
		Name:           "schema",
		RepetitionType: thrift.New(format.Required),
		NumChildren:    thrift.New(int32(len(cols))),
	})
	for _, c := range cols {
		el := format.SchemaElement{
			Name:           c.name,
			Type:           thrift.New(c.kind.physical()),
			RepetitionType: thrift.New(format.Required),
		}
		if c.optional {
			el.RepetitionType = thrift.New(format.Optional)
		}
		setInt := func(bits int8, signed bool, ct deprecated.ConvertedType) {
			el.LogicalType = format.LogicalType{Value: &format.IntType{BitWidth: bits, IsSigned: signed}}
			el.ConvertedType = thrift.New(ct)
		}
		switch c.kind {
		case kindInt32:
			setInt(32, true, deprecated.Int32)
		case kindUint32:
			setInt(32, false, deprecated.Uint32)
		case kindInt64:
			setInt(64, true, deprecated.Int64)
		case kindUint64:
			setInt(64, false, deprecated.Uint64)
		case kindBytes:
			if c.utf8 {
				el.LogicalType = format.LogicalType{Value: &format.StringType{}}
				el.ConvertedType = thrift.New(deprecated.UTF8)
			}
		}
		els = append(els, el)
	}
	return els
}

// arrowSchemaKey is the key of the serialized Arrow schema.
const arrowSchemaKey = "ARROW:schema"

// keyValues is the file's key-value metadata: the Arrow schema's own
// metadata, then the schema itself under ARROW:schema (an IPC schema
// message, base64), as Arrow's writers store it, so that readers get the
// exact Arrow types back (uint32, large_utf8, dictionaries).
func keyValues(schema *arrow.Schema) ([]format.KeyValue, error) {
	md := schema.Metadata()
	kvs := make([]format.KeyValue, 0, md.Len()+1)
	for i, k := range md.Keys() {
		if k == arrowSchemaKey {
			continue // replaced by this schema's
		}
		kvs = append(kvs, format.KeyValue{Key: k, Value: md.Values()[i]})
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("cannot serialize the Arrow schema: %w", err)
	}
	kvs = append(kvs, format.KeyValue{Key: arrowSchemaKey, Value: base64.StdEncoding.EncodeToString(buf.Bytes())})
	return kvs, nil
}
