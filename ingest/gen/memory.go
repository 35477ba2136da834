package gen

import (
	"bufio"
	"fmt"
	"os"
)

// physicalMemory is the machine's memory in bytes, or 0 where that cannot
// be read; tests set it.
var physicalMemory = memTotal

// memTotal is MemTotal of /proc/meminfo in bytes, or 0 where that cannot be
// read.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int64
		if n, _ := fmt.Sscanf(sc.Text(), "MemTotal: %d kB", &kb); n == 1 {
			return kb << 10
		}
	}
	return 0
}
