// Package dataset lists the part files of a dataset: a directory (Spark's,
// DuckDB's PER_THREAD_OUTPUT, Hive-partitioned key=value directories), a
// glob, or an object store prefix. Package ingest reads them as one table.
//
// As Spark, Hive and pyarrow do, files and directories whose names start
// with "_" or "." are not parts (_SUCCESS, _metadata, _temporary/, .crc
// files, hidden files), nor are checksum files (NAME.sha256, which check
// their NAME). A key=value directory is a Hive partition: its value is
// not an edge column (gpipe reads edge columns from the files), but the
// layout is checked: every part must lie under the same partition keys,
// in the same order, as in Spark's check of directory structures.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Part is one file of a dataset.
type Part struct {
	// Name is the file as messages name it: its path (the root as given,
	// joined with the file's path under it), or its URL.
	Name string
	// Rel is the file's path under the dataset's root, with slashes.
	Rel string
	// Info is the object, for a dataset in an object store.
	Info objstore.Info
	// Partition is the Hive key=value directories the file lies under.
	Partition []KV
}

// KV is one Hive partition directory: key=value.
type KV struct{ Key, Value string }

// Dataset is the parts of a directory, glob or prefix, sorted by their
// path under it.
type Dataset struct {
	Name  string // as the user gave it
	Parts []Part
}

// Keys are the partition keys every part lies under, in order.
func (d *Dataset) Keys() []string {
	if len(d.Parts) == 0 {
		return nil
	}
	keys := make([]string, len(d.Parts[0].Partition))
	for i, kv := range d.Parts[0].Partition {
		keys[i] = kv.Key
	}
	return keys
}

// checksumSuffix is the checksum files' extension (ingest.ChecksumSuffix).
const checksumSuffix = ".sha256"

// IsPattern says whether path holds glob characters (* ? [).
func IsPattern(path string) bool { return strings.ContainsAny(path, "*?[") }

// hidden says whether a file or directory named name is not part of the
// data: _SUCCESS, _metadata, _temporary, dot files, checksum files.
func hidden(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, checksumSuffix)
}

// hiddenPath says whether a relative path (slashes) has a hidden element.
func hiddenPath(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if hidden(seg) {
			return true
		}
	}
	return false
}

// finish sorts the parts, reads their partitions and checks the layout.
func finish(name string, parts []Part) (*Dataset, error) {
	if len(parts) == 0 {
		return nil, &usererr.Error{Kind: usererr.NotFound, File: name, Row: -1, Err: os.ErrNotExist,
			Problem: "holds no part files (names that start with _ or . are not data, nor are .sha256 files)",
			Fix:     "check the path"}
	}
	slices.SortFunc(parts, func(a, b Part) int { return strings.Compare(a.Rel, b.Rel) })
	for i := range parts {
		parts[i].Partition = partitionOf(parts[i].Rel)
	}
	first := &parts[0]
	for i := range parts[1:] {
		p := &parts[i+1]
		if !slices.EqualFunc(first.Partition, p.Partition, func(a, b KV) bool { return a.Key == b.Key }) {
			return nil, &usererr.Error{Kind: usererr.Input, File: name, Row: -1,
				Problem: fmt.Sprintf("the files lie under different partition directories: %s under %s, %s under %s",
					echo.Quote(first.Rel), describeKeys(first.Partition), echo.Quote(p.Rel), describeKeys(p.Partition)),
				Fix: "give every file the same key=value directories (as Hive and Spark write them), or read a narrower directory or glob"}
		}
	}
	return &Dataset{Name: name, Parts: parts}, nil
}

func describeKeys(kvs []KV) string {
	if len(kvs) == 0 {
		return "no key=value directory"
	}
	keys := make([]string, len(kvs))
	for i, kv := range kvs {
		keys[i] = kv.Key + "=..."
	}
	return strings.Join(keys, "/")
}

// partitionOf reads the key=value directories of a relative path.
func partitionOf(rel string) []KV {
	dirs := strings.Split(rel, "/")
	var kvs []KV
	for _, d := range dirs[:len(dirs)-1] {
		if k, v, ok := strings.Cut(d, "="); ok && k != "" {
			kvs = append(kvs, KV{Key: k, Value: v})
		}
	}
	return kvs
}

// Local lists the dataset at path: a directory (every file under it), or a
// glob whose matches are files or directories ("**" matches any number of
// directories). Symbolic links are followed.
func Local(path string) (*Dataset, error) {
	root, pattern := splitPattern(filepath.ToSlash(path))
	if err := checkPattern(path, pattern); err != nil {
		return nil, err
	}
	var parts []Part
	err := walk(filepath.FromSlash(root), "", 0, func(rel string) {
		if pattern == nil || matchPrefix(pattern, strings.Split(rel, "/")) && !hiddenPath(rel) {
			parts = append(parts, Part{Name: joinName(path, root, rel), Rel: rel})
		}
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &usererr.Error{Kind: usererr.NotFound, File: path, Row: -1, Err: err,
				Problem: "no such file or directory", Fix: "check the path"}
		}
		return nil, usererr.InFile(path, "cannot list the directory: "+err.Error(), "check the path and its permissions").Because(err)
	}
	return finish(path, parts)
}

// joinName is the name of file rel of the dataset given as path, whose
// root is root: the user's spelling of the root, then rel.
func joinName(given, root, rel string) string {
	if root == "." && !strings.HasPrefix(filepath.ToSlash(given), "./") {
		return filepath.FromSlash(rel)
	}
	return filepath.Join(filepath.FromSlash(root), filepath.FromSlash(rel))
}

// maxDepth bounds the directories walk descends (a loop of symbolic links
// would be endless).
const maxDepth = 64

// walk calls file with the path under the root of every file below dir
// (rel: dir's own), hidden ones left out.
func walk(dir, rel string, depth int, file func(rel string)) error {
	if depth > maxDepth {
		return fmt.Errorf("more than %d directories deep (a loop of symbolic links?)", maxDepth)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		sub := path.Join(rel, e.Name())
		full := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			st, err := os.Stat(full)
			if err != nil {
				return err
			}
			isDir = st.IsDir()
		}
		if isDir {
			if err := walk(full, sub, depth+1, file); err != nil {
				return err
			}
			continue
		}
		file(sub)
	}
	return nil
}

// splitPattern cuts a slash path at its first element with glob
// characters: the root directory before it, and the pattern's elements
// (nil for a path without any).
func splitPattern(p string) (string, []string) {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if IsPattern(s) {
			root := strings.Join(segs[:i], "/")
			if root == "" && i > 0 {
				root = "/"
			} else if root == "" {
				root = "."
			}
			return root, segs[i:]
		}
	}
	return p, nil
}

// matchPrefix says whether the elements of a file's path, or of one of the
// directories it lies in, match the pattern.
func matchPrefix(pattern, segs []string) bool {
	for k := len(segs); k >= 1; k-- {
		if match(pattern, segs[:k]) {
			return true
		}
	}
	return false
}

// match matches path elements against pattern elements (path.Match's
// syntax each, "**" any number of elements).
func match(pattern, segs []string) bool {
	if len(pattern) == 0 {
		return len(segs) == 0
	}
	if pattern[0] == "**" {
		for k := 0; k <= len(segs); k++ {
			if match(pattern[1:], segs[k:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pattern[0], segs[0])
	return ok && err == nil && match(pattern[1:], segs[1:])
}

// checkPattern refuses a glob that path.Match cannot read.
func checkPattern(given string, pattern []string) error {
	for _, seg := range pattern {
		if _, err := path.Match(seg, ""); err != nil {
			return &usererr.Error{Kind: usererr.Usage, File: given, Row: -1,
				Problem: fmt.Sprintf("the glob %s is malformed (%v)", echo.Quote(seg), err),
				Fix:     "write * for any name, ? for one character, [abc] for one of a set, ** for any directories"}
		}
	}
	return nil
}

// Remote lists the dataset at loc in an S3 store: the objects under a
// prefix (loc.Key, taken as a directory: "/" is added where it has none),
// or those a glob in the key matches.
func Remote(ctx context.Context, st *objstore.S3, loc objstore.Location) (*Dataset, error) {
	root, pattern := splitPattern(loc.Key)
	if err := checkPattern(loc.URL, pattern); err != nil {
		return nil, err
	}
	prefix := root
	switch {
	case pattern != nil && root == ".":
		prefix = ""
	case prefix != "" && !strings.HasSuffix(prefix, "/"):
		prefix += "/"
	}
	infos, err := st.List(ctx, loc.Child(prefix))
	if err != nil {
		return nil, err
	}
	var parts []Part
	for _, info := range infos {
		rel := strings.TrimPrefix(info.Loc.Key, prefix)
		// Keys ending in "/" are the folder markers of consoles.
		if rel == "" || strings.HasSuffix(rel, "/") || hiddenPath(rel) {
			continue
		}
		if pattern != nil && !matchPrefix(pattern, strings.Split(rel, "/")) {
			continue
		}
		parts = append(parts, Part{Name: info.Loc.URL, Rel: rel, Info: info})
	}
	return finish(loc.URL, parts)
}
