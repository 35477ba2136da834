package ingest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpipe/gpipe/internal/usererr"
)

// The errors every reader reports in the same words.

// errMissingColumn reports a column that is not in the input. role is
// "source", "destination" or "weight"; flag the option that names it.
// The columns are listed as named, but for names with characters that are
// not printable (a CR or a vertical tab in a CSV header), which are quoted
// so that the message stays one line.
func errMissingColumn(file, name, role, flag string, available []string) error {
	names := make([]string, len(available))
	for i, a := range available {
		names[i] = a
		if strings.IndexFunc(a, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			names[i] = strconv.Quote(a)
		}
	}
	return usererr.InFile(file,
		fmt.Sprintf("no %s column %q (columns: %s)", role, name, strings.Join(names, ", ")),
		fmt.Sprintf("name the %s column with %s", role, flag))
}

// errKeyType reports a key column whose type cannot hold vertex keys.
func errKeyType(file, column, typ string) error {
	return &usererr.Error{Kind: usererr.Input, File: file, Column: column, Row: -1,
		Problem: fmt.Sprintf("type %s cannot be a vertex key (keys must be int32, int64, uint32, uint64 or string)", typ),
		Fix:     "cast the column to one of these types, or name another column"}
}

// errKeyTypesDiffer reports source and destination columns of different types.
func errKeyTypesDiffer(file, src, srcType, dst, dstType string) error {
	return usererr.InFile(file,
		fmt.Sprintf("source column %q is %s but destination column %q is %s", src, srcType, dst, dstType),
		"cast both key columns to the same type")
}

// errWeightType reports a weight column that is not numeric.
func errWeightType(file, column, typ string) error {
	return &usererr.Error{Kind: usererr.Input, File: file, Column: column, Row: -1,
		Problem: fmt.Sprintf("type %s cannot be an edge weight (weights must be integer or floating point)", typ),
		Fix:     "cast the column to a numeric type, or name another column with --weight-col"}
}

// errNullKey reports a null vertex key.
func errNullKey(file, column string, row int64) error {
	return usererr.AtRow(file, column, row, "null vertex key",
		"remove the row or pass --skip-invalid to drop rows with null keys")
}

// errNullWeight reports a null weight.
func errNullWeight(file, column string, row int64) error {
	return usererr.AtRow(file, column, row, "null weight",
		"fill in the weight or pass --skip-invalid to drop rows with null weights")
}

// Reasons recorded in EdgeTable.Skipped.
func skipNullKey(column string) string    { return fmt.Sprintf("null key in column %q", column) }
func skipNullWeight(column string) string { return fmt.Sprintf("null weight in column %q", column) }

// skipBadUTF8 is the reason recorded for text and CSV rows dropped because a
// string key is not valid UTF-8.
const skipBadUTF8 = "vertex key not valid UTF-8"
