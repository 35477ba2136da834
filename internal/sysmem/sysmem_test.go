package sysmem

import (
	"testing"
	"testing/fstest"
)

const meminfo = "MemTotal:       24684092 kB\nMemFree:        1000 kB\n"

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// TestLimit reads the machine's memory and the control group limits of
// cgroup v1 and v2, at the group's path and at the mount's root (a cgroup
// namespace), the lowest winning.
func TestLimit(t *testing.T) {
	const total = 24684092 << 10
	cases := []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"no proc", fstest.MapFS{}, 0},
		{"no cgroup", fstest.MapFS{"proc/meminfo": file(meminfo)}, total},
		{"v2 without a limit", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/app\n"),
			"sys/fs/cgroup/app/memory.max": file("max\n"), "sys/fs/cgroup/memory.max": file("max\n"),
		}, total},
		{"v2 at the group's path", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/app/job\n"),
			"sys/fs/cgroup/app/job/memory.max": file("1073741824\n"),
		}, 1 << 30},
		{"v2 on a parent", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/app/job\n"),
			"sys/fs/cgroup/app/job/memory.max": file("max\n"), "sys/fs/cgroup/app/memory.max": file("2147483648\n"),
		}, 2 << 30},
		{"v2 in a namespace", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("536870912\n"),
		}, 512 << 20},
		{"v1", fstest.MapFS{
			"proc/meminfo":     file(meminfo),
			"proc/self/cgroup": file("5:cpuacct,cpu:/x\n4:memory:/docker/abc\n0::/\n"),
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("3221225472\n"),
		}, 3 << 30},
		{"v1 unlimited", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("4:memory:/docker/abc\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n"),
		}, total},
		{"a limit above the machine's memory", fstest.MapFS{
			"proc/meminfo": file(meminfo), "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("99999999999999\n"),
		}, total},
	}
	for _, c := range cases {
		if got := limit(c.fs); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if Limit() < 0 || Limit() > Physical() && Physical() > 0 {
		t.Errorf("Limit %d, Physical %d", Limit(), Physical())
	}
}
