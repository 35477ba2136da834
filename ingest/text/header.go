package text

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// A header line in an edge list. Edge lists have no column names, so a
// first line such as "src dst" would be read as an edge between vertices
// "src" and "dst" (and would turn every key into a string). With
// edges.HeaderAuto such a line is refused, naming it: where every other
// line has integer keys (then it cannot be an edge of the same graph), or
// where its fields are the names edge tables give their columns. A string
// key graph whose first edge is not such a pair cannot be told from one
// with a header, and is read as it is. HeaderYes skips the first line,
// HeaderNo reads it as an edge.

// headerSample is the most data lines after the first that are looked at
// before a whole parse confirms that every line has integer keys.
const headerSample = 100

// readEdgeList reads the lines of an edge list, the first of them as
// cfg.opts.Header says.
func readEdgeList(ctx context.Context, data []byte, cfg config) (*edges.Table, error) {
	mode := cfg.opts.Header
	switch mode {
	case edges.HeaderAuto, edges.HeaderYes, edges.HeaderNo:
	default:
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("--header %s is not yes, no or auto", echo.Quote(string(mode))), "pass --header yes, no or auto")
	}
	start, end, line := firstDataLine(data)
	if start < 0 || mode == edges.HeaderNo {
		return parseEdgeLines(ctx, data, cfg)
	}
	rest := cfg
	rest.firstLine = cfg.firstLine + line + 1
	after := data[min(end+1, len(data)):]
	if mode == edges.HeaderYes {
		return parseEdgeLines(ctx, after, rest)
	}
	fields := strings.Fields(string(data[start:end]))
	if len(fields) < 2 || len(fields) > 3 {
		return parseEdgeLines(ctx, data, cfg) // the parser's error names it
	}
	if headerNames(fields) {
		return nil, errHeader(cfg.name, cfg.firstLine+line, data[start:end], "its fields are column names, not vertex keys")
	}
	if !isWord(fields[0]) && !isWord(fields[1]) || !sampleIntKeys(after) {
		return parseEdgeLines(ctx, data, cfg)
	}
	// The lines after it start with integer keys: parse them all to know.
	t, err := parseEdgeLines(ctx, after, rest)
	if err == nil && t.KeyType == edges.KeyString {
		t.Release()
		return parseEdgeLines(ctx, data, cfg)
	}
	if err != nil {
		return nil, err
	}
	t.Release()
	return nil, errHeader(cfg.name, cfg.firstLine+line, data[start:end], "it is text where every other line has integer keys")
}

// errHeader refuses line, the first data line, as a header.
func errHeader(name string, line int64, text []byte, why string) error {
	return usererr.AtLine(name, line, fmt.Sprintf("the first line %s looks like a header, not an edge: %s", echo.Quote(string(bytes.TrimSpace(text))), why),
		"an edge list has no header: comment the line out with '#', or pass --header yes to skip it (--header no reads it as an edge)")
}

// firstDataLine finds the first line that is not blank or a comment: its
// start and end (the newline's offset, or len(data)) and its number from 0;
// start is -1 when there is none.
func firstDataLine(data []byte) (start, end int, line int64) {
	for p := 0; p < len(data); line++ {
		e := bytes.IndexByte(data[p:], '\n')
		if e < 0 {
			e = len(data)
		} else {
			e += p
		}
		q := p
		for q < e && isBlank[data[q]] {
			q++
		}
		if q < e && data[q] != '#' && data[q] != '%' {
			return p, e, line
		}
		p = e + 1
	}
	return -1, -1, 0
}

// sampleIntKeys says whether data's first data lines (up to headerSample)
// all start with two integer keys, and there is one.
func sampleIntKeys(data []byte) bool {
	n := 0
	for n < headerSample {
		start, end, _ := firstDataLine(data)
		if start < 0 {
			break
		}
		f := strings.Fields(string(data[start:end]))
		if len(f) < 2 || !isIntKey(f[0]) || !isIntKey(f[1]) {
			return false
		}
		n++
		data = data[min(end+1, len(data)):]
	}
	return n > 0
}

// isWord says whether a field is text rather than a number (a number too
// large for a key is still not a column name).
func isWord(f string) bool {
	_, err := strconv.ParseFloat(f, 64)
	return err != nil && !errors.Is(err, strconv.ErrRange)
}

// isIntKey says whether a field is an integer key, as the parser reads one.
func isIntKey(f string) bool {
	b := []byte(f + "\n")
	_, q, ok := parseInt(b, 0)
	return ok && q == len(f)
}

// headerSources and headerTargets are the names edge tables give their
// key columns, lowercased, and headerWeights their weights'.
var (
	headerSources = []string{"src", "source", "from", "from_id", "src_id", "source_id", "node1", "fromnodeid"}
	headerTargets = []string{"dst", "target", "destination", "to", "to_id", "dst_id", "target_id", "node2", "tonodeid"}
	headerWeights = []string{"weight", "w", "cost", "length", "distance", "value", "capacity", "width"}
)

// headerNames says whether a line's fields are column names: a source
// name, a destination name, and a weight name if a third. "u v" is a
// header only with a weight name after it: alone it may well be an edge
// between two letters.
func headerNames(fields []string) bool {
	has := func(set []string, f string) bool {
		f = strings.Trim(f, `"'`)
		for _, s := range set {
			if strings.EqualFold(s, f) {
				return true
			}
		}
		return false
	}
	weight := len(fields) == 2 || has(headerWeights, fields[2])
	if strings.EqualFold(fields[0], "u") && strings.EqualFold(fields[1], "v") {
		return len(fields) == 3 && weight
	}
	return has(headerSources, fields[0]) && has(headerTargets, fields[1]) && weight
}
