//go:build !unix

package mmap

import (
	"io"
	"os"

	"github.com/gpipe/gpipe/internal/usererr"
)

// File is a file's contents; where there is no mmap, they are read into
// memory.
type File struct {
	Data []byte
}

// InMemory is data, read already, as a File.
func InMemory(data []byte) *File { return &File{Data: data} }

// Map reads the whole of f, named path in messages.
func Map(path string, f *os.File) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path").Because(err)
	}
	if st.IsDir() {
		return nil, usererr.InFile(path, "is a directory, not a file", "name a file")
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path").Because(err)
	}
	return &File{Data: data}, nil
}

// Close lets the contents go.
func (m *File) Close() { m.Data = nil }
