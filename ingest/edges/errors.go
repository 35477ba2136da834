package edges

import (
	"fmt"
	"strings"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// The errors every reader reports in the same words.

// ErrMissingColumn reports a column that is not in the input. role is
// "source", "destination" or "weight"; flag the option that names it.
func ErrMissingColumn(file, name, role, flag string, available []string) error {
	return usererr.InFile(file, fmt.Sprintf("no %s column %s (columns: %s)", role, echo.Quote(name), listColumns(available)),
		fmt.Sprintf("name the %s column with %s", role, flag))
}

// errDuplicateColumn reports an edge column whose name n columns of the
// input have, so that which one is meant is not clear. flag is the option
// that names it.
func errDuplicateColumn(file, name, role, flag string, n int, available []string) error {
	return &usererr.Error{Kind: usererr.Input, File: file, Column: name, Row: -1,
		Problem: fmt.Sprintf("%d columns are named %s, so the %s column is ambiguous (columns: %s)", n, echo.Quote(name), role, listColumns(available)),
		Fix:     fmt.Sprintf("rename one of them, or name another %s column with %s", role, flag)}
}

// maxListed is the most column names a message lists.
const maxListed = 20

// listColumns lists column names for a message: each as echo.Text shows it (so
// that the message stays one line and short), and at most maxListed.
func listColumns(available []string) string {
	names := make([]string, 0, min(len(available), maxListed+1))
	for i, a := range available {
		if i == maxListed {
			names = append(names, fmt.Sprintf("... %d in all", len(available)))
			break
		}
		names = append(names, echo.Text(a))
	}
	return strings.Join(names, ", ")
}

// CheckUnique reports an edge column (src, dst, and weight when read) whose
// name more than one of the input's columns has.
func CheckUnique(file string, cols Columns, names []string) error {
	for _, c := range []struct{ name, role, flag string }{
		{cols.Src, "source", "--src-col"}, {cols.Dst, "destination", "--dst-col"}, {cols.Weight, "weight", "--weight-col"},
	} {
		if c.role == "weight" && !cols.ReadWeight {
			continue
		}
		if n := countNames(names, c.name); n > 1 {
			return errDuplicateColumn(file, c.name, c.role, c.flag, n, names)
		}
	}
	return nil
}

// countNames is how many of names are name.
func countNames(names []string, name string) int {
	n := 0
	for _, x := range names {
		if x == name {
			n++
		}
	}
	return n
}

// ErrKeyType reports a key column whose type cannot hold vertex keys.
func ErrKeyType(file, column, typ string) error {
	return &usererr.Error{Kind: usererr.Input, File: file, Column: column, Row: -1,
		Problem: fmt.Sprintf("type %s cannot be a vertex key (keys must be int32, int64, uint32, uint64 or string)", typ),
		Fix:     "cast the column to one of these types, or name another column"}
}

// ErrKeyTypesDiffer reports source and destination columns of different types.
func ErrKeyTypesDiffer(file, src, srcType, dst, dstType string) error {
	return usererr.InFile(file,
		fmt.Sprintf("source column %s is %s but destination column %s is %s", echo.Quote(src), srcType, echo.Quote(dst), dstType),
		"cast both key columns to the same type")
}

// ErrWeightType reports a weight column that is not numeric.
func ErrWeightType(file, column, typ string) error {
	return &usererr.Error{Kind: usererr.Input, File: file, Column: column, Row: -1,
		Problem: fmt.Sprintf("type %s cannot be an edge weight (weights must be integer or floating point)", typ),
		Fix:     "cast the column to a numeric type, or name another column with --weight-col"}
}

// ErrNullKey reports a null vertex key.
func ErrNullKey(file, column string, row int64) error {
	return usererr.AtRow(file, column, row, "null vertex key",
		"remove the row or pass --skip-invalid to drop rows with null keys")
}

// ErrNullWeight reports a null weight.
func ErrNullWeight(file, column string, row int64) error {
	return usererr.AtRow(file, column, row, "null weight",
		"fill in the weight or pass --skip-invalid to drop rows with null weights")
}

// Reasons recorded in Table.Skipped.
func SkipNullKey(column string) string    { return "null key in column " + echo.Quote(column) }
func SkipNullWeight(column string) string { return "null weight in column " + echo.Quote(column) }

// SkipBadUTF8 is the reason recorded for rows dropped because a string key
// is not valid UTF-8 (every format: ValidUTF8, ErrBadUTF8).
const SkipBadUTF8 = "vertex key not valid UTF-8"

// SkipBadWeight is the reason recorded for lines dropped because their
// weight is not a number.
func SkipBadWeight(column string) string { return "invalid weight in column " + echo.Quote(column) }
