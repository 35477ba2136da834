package ingest

import (
	"bytes"
	"context"
	"testing"
)

// readCSVBytes reads data as a CSV edge table named edges.csv.
func readCSVBytes(data []byte, opts Options) (*EdgeTable, error) {
	return readCSV(context.Background(), "edges.csv", bytes.NewReader(data), opts)
}

// A header name with a CR or a vertical tab is quoted in the message, which
// stays one line (found by FuzzCSV).
func TestCSVMissingColumnControlChars(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{"\v\n", `no source column "src" (columns: "\v")`},
		{"src,\"dst\r\",w\n1,2,3\n", `no destination column "dst" (columns: src, "dst\r", w)`},
		{"a,b\n", `no source column "src" (columns: a, b)`},
	} {
		_, err := readCSVBytes([]byte(tc.data), Options{})
		userErr(t, err, "edges.csv", tc.want)
	}
}
