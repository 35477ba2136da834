// Package sysmem says how much memory the process may use: the machine's
// (MemTotal of /proc/meminfo) or, where a control group limits the
// process (a container's memory limit), that limit when it is lower. A
// default derived from the machine's memory that ignored a container's
// limit would have the kernel kill the process before the default
// stopped it.
package sysmem

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
)

// Limit is the memory the process may use in bytes: MemTotal, or the
// lowest memory limit of the process's control group and its parents
// where one is lower; 0 where neither can be read (not Linux).
func Limit() int64 { return limit(os.DirFS("/")) }

// Physical is the machine's memory in bytes (MemTotal of /proc/meminfo),
// or 0 where that cannot be read.
func Physical() int64 { return memTotal(os.DirFS("/")) }

// limit is Limit over the file system root (a test's, or "/").
func limit(root fs.FS) int64 {
	total := memTotal(root)
	if c := cgroupLimit(root); c > 0 && (total == 0 || c < total) {
		return c
	}
	return total
}

// memTotal is MemTotal of proc/meminfo in bytes, or 0.
func memTotal(root fs.FS) int64 {
	f, err := root.Open("proc/meminfo")
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

// cgroupLimit is the lowest memory limit set on the process's control
// group or a parent (cgroup v2's memory.max, v1's
// memory.limit_in_bytes), or 0 where none is set. The group's path comes
// from proc/self/cgroup; where the container sees its own group at the
// root of the mount (a cgroup namespace) rather than at that path, the
// root's file holds its limit, so both are read.
func cgroupLimit(root fs.FS) int64 {
	b, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0
	}
	var lowest int64
	take := func(dir, file string) {
		for p := path.Clean("/" + dir); ; p = path.Dir(p) {
			if n := readLimit(root, strings.TrimPrefix(path.Join(p, file), "/")); n > 0 && (lowest == 0 || n < lowest) {
				lowest = n
			}
			if p == "/" {
				return
			}
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			take("sys/fs/cgroup"+parts[2], "memory.max")
			take("sys/fs/cgroup", "memory.max")
		case hasController(parts[1], "memory"):
			take("sys/fs/cgroup/memory"+parts[2], "memory.limit_in_bytes")
			take("sys/fs/cgroup/memory", "memory.limit_in_bytes")
		}
	}
	return lowest
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a limit file: a byte count, or 0 for "max", a missing
// file or anything else. (cgroup v1 says "no limit" with a count near
// 2^63, which is never lower than the machine's memory.)
func readLimit(root fs.FS, name string) int64 {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
