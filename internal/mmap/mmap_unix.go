//go:build unix

// Package mmap maps files read-only into memory (reads them whole where
// there is no mmap), so that readers can use their bytes in place.
package mmap

import (
	"fmt"
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gpipe/gpipe/internal/usererr"
)

// File is a file mapped read-only into memory.
type File struct {
	Data     []byte
	once     sync.Once
	inMemory bool // Data is Go memory (InMemory), not a mapping
}

// InMemory is data, read already, as a File.
func InMemory(data []byte) *File { return &File{Data: data, inMemory: true} }

// Map maps the whole of f, named path in messages.
func Map(path string, f *os.File) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path").Because(err)
	}
	if st.IsDir() {
		return nil, usererr.InFile(path, "is a directory, not a file", "name a file")
	}
	size := st.Size()
	if size == 0 {
		return &File{}, nil
	}
	if size > math.MaxInt {
		return nil, usererr.InFile(path, fmt.Sprintf("the file is too large to map (%d bytes)", size), "")
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, usererr.InFile(path, "cannot map the file into memory: "+err.Error(), "check that it is a regular file").Because(err)
	}
	return &File{Data: data}, nil
}

// Close unmaps the file; later calls do nothing.
func (m *File) Close() {
	m.once.Do(func() {
		if m.Data != nil && !m.inMemory {
			_ = unix.Munmap(m.Data)
			m.Data = nil
		}
	})
}
