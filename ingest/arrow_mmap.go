//go:build unix

package ingest

import (
	"fmt"
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gpipe/gpipe/internal/usererr"
)

// mappedFile is a file mapped read-only into memory.
type mappedFile struct {
	data     []byte
	once     sync.Once
	inMemory bool // data is Go memory (inMemory), not a mapping
}

// inMemory is data, read already, as a mappedFile.
func inMemory(data []byte) *mappedFile { return &mappedFile{data: data, inMemory: true} }

// mapFile maps the whole of f, named path in messages.
func mapFile(path string, f *os.File) (*mappedFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, usererr.InFile(path, "cannot read: "+err.Error(), "check the path")
	}
	if st.IsDir() {
		return nil, usererr.InFile(path, "is a directory, not a file", "name a file")
	}
	size := st.Size()
	if size == 0 {
		return &mappedFile{}, nil
	}
	if size > math.MaxInt {
		return nil, usererr.InFile(path, fmt.Sprintf("the file is too large to map (%d bytes)", size), "")
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, usererr.InFile(path, "cannot map the file into memory: "+err.Error(), "check that it is a regular file")
	}
	return &mappedFile{data: data}, nil
}

// close unmaps the file; later calls do nothing.
func (m *mappedFile) close() {
	m.once.Do(func() {
		if m.data != nil && !m.inMemory {
			_ = unix.Munmap(m.data)
			m.data = nil
		}
	})
}
