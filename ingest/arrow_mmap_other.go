//go:build !unix

package ingest

import (
	"io"
	"os"

	"github.com/gpipe/gpipe/internal/usererr"
)

// mappedFile is a file's contents; where there is no mmap, they are read
// into memory.
type mappedFile struct {
	data []byte
}

// inMemory is data, read already, as a mappedFile.
func inMemory(data []byte) *mappedFile { return &mappedFile{data: data} }

// mapFile reads the whole of f, named path in messages.
func mapFile(path string, f *os.File) (*mappedFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path")
	}
	if st.IsDir() {
		return nil, usererr.InFile(path, "is a directory, not a file", "name a file")
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path")
	}
	return &mappedFile{data: data}, nil
}

func (m *mappedFile) close() { m.data = nil }
