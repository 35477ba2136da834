package gpu

// Tests of the NCCL and peer plumbing that need no GPU and no NCCL: where
// libnccl.so.2 is looked for and in which order, the version check, the
// error texts, the environment NCCL reads, argument checks.

import (
	"errors"
	"fmt"
	"os"
	"path"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpipe/gpipe/internal/usererr"
)

// fakeFS is a file system and loader for ncclSearch: files that exist,
// folders, and the files that load; it records every open.
type fakeFS struct {
	env    map[string]string
	files  map[string]bool // path -> loads
	dirs   map[string]bool
	opened []string
	mapped string
}

func (f *fakeFS) search() ncclSearch {
	return ncclSearch{
		getenv: func(k string) string { return f.env[k] },
		glob: func(pattern string) ([]string, error) {
			var out []string
			for d := range f.dirs {
				if ok, _ := path.Match(pattern, d); ok {
					out = append(out, d)
				}
			}
			sort.Strings(out)
			return out, nil
		},
		isDir: func(p string) (bool, bool) {
			if f.dirs[p] {
				return true, true
			}
			_, ok := f.files[p]
			return false, ok
		},
		open: func(p string) (uintptr, error) {
			f.opened = append(f.opened, p)
			if f.files[p] {
				return 1, nil
			}
			if _, ok := f.files[p]; ok {
				return 0, errors.New(p + ": wrong ELF class: ELFCLASS32")
			}
			return 0, errors.New(p + ": cannot open shared object file: No such file or directory")
		},
		mapped: func(string) string { return f.mapped },
	}
}

// wheel is where pip's NCCL wheel puts the library under site-packages dir.
func wheel(dir string) string { return dir + "/nvidia/nccl/lib/libnccl.so.2" }

func TestNCCLSearchOrder(t *testing.T) {
	venv := "/work/venv/lib/python3.12/site-packages"
	user := "/home/u/.local/lib/python3.11/site-packages"
	conda := "/opt/conda/lib/python3.10/site-packages"
	local := "/usr/local/lib/python3.11/dist-packages"
	system := "/usr/lib/python3/dist-packages"
	fs := &fakeFS{
		env:  map[string]string{"VIRTUAL_ENV": "/work/venv", "HOME": "/home/u"},
		dirs: map[string]bool{venv: true, user: true, conda: true, local: true, system: true, "/usr/lib/python3.11": true},
		// The virtual environment's wheel is broken; the user's loads.
		files: map[string]bool{wheel(venv): false, wheel(user): true, wheel(system): true},
	}
	lib, p, err := fs.search().find()
	if err != nil || lib == 0 || p != wheel(user) {
		t.Fatalf("find = %d, %q, %v; want the user's wheel %s", lib, p, err, wheel(user))
	}
	if want := []string{"libnccl.so.2", wheel(venv), wheel(user)}; !reflect.DeepEqual(fs.opened, want) {
		t.Errorf("opened %q, want %q", fs.opened, want)
	}

	// Python's precedence among the roots, with nothing loadable: every
	// existing wheel is tried, in order, and the error lists the failures.
	fs.files = map[string]bool{wheel(venv): false, wheel(conda): false, wheel(local): false, wheel(system): false}
	fs.opened = nil
	_, _, err = fs.search().find()
	if want := []string{"libnccl.so.2", wheel(venv), wheel(conda), wheel(local), wheel(system)}; !reflect.DeepEqual(fs.opened, want) {
		t.Errorf("opened %q, want %q", fs.opened, want)
	}
	msg := checkNCCLError(t, err)
	for _, want := range []string{"NCCL not found", "GPIPE_NCCL is unset", "libnccl.so.2 is not on the loader's path",
		"/work/venv/lib, /home/u/.local/lib, /opt/conda/lib, /usr/local/lib, /usr/lib", "nvidia/nccl/lib/libnccl.so.2",
		"found but not loadable: " + wheel(venv) + " (", "wrong ELF class", wheel(system),
		"; install NCCL 2.18 or newer", "pip install nvidia-nccl-cu12", "set GPIPE_NCCL to libnccl.so.2 or the folder"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}

	// No virtual environment, no HOME, no wheel at all.
	fs = &fakeFS{env: map[string]string{}, dirs: map[string]bool{system: true}, files: map[string]bool{}}
	_, _, err = fs.search().find()
	msg = checkNCCLError(t, err)
	if strings.Contains(msg, "found but not loadable") || !strings.Contains(msg, "under /opt/conda/lib, /usr/local/lib, /usr/lib ") {
		t.Errorf("error %q", msg)
	}
	if want := []string{"libnccl.so.2"}; !reflect.DeepEqual(fs.opened, want) {
		t.Errorf("opened %q, want %q: a folder without the wheel is not opened", fs.opened, want)
	}
}

func TestNCCLSearchLoaderFirst(t *testing.T) {
	system := "/usr/lib/python3/dist-packages"
	fs := &fakeFS{
		env:    map[string]string{},
		dirs:   map[string]bool{system: true},
		files:  map[string]bool{"libnccl.so.2": true, wheel(system): true},
		mapped: "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5",
	}
	_, p, err := fs.search().find()
	if err != nil || p != fs.mapped || len(fs.opened) != 1 {
		t.Errorf("find = %q, %v after opening %q; want the loader's %s only", p, err, fs.opened, fs.mapped)
	}
	fs.mapped, fs.opened = "", nil
	if _, p, err := fs.search().find(); err != nil || p != "libnccl.so.2" {
		t.Errorf("find without maps = %q, %v; want the soname", p, err)
	}
}

func TestNCCLSearchEnv(t *testing.T) {
	system := "/usr/lib/python3/dist-packages"
	fs := &fakeFS{
		env:   map[string]string{"GPIPE_NCCL": "/opt/nccl/lib"},
		dirs:  map[string]bool{"/opt/nccl/lib": true, system: true},
		files: map[string]bool{"/opt/nccl/lib/libnccl.so.2": true, "libnccl.so.2": true, wheel(system): true},
	}
	if _, p, err := fs.search().find(); err != nil || p != "/opt/nccl/lib/libnccl.so.2" || len(fs.opened) != 1 {
		t.Errorf("GPIPE_NCCL=folder: find = %q, %v after opening %q", p, err, fs.opened)
	}
	fs.env["GPIPE_NCCL"], fs.opened = "/opt/nccl/lib/libnccl.so.2", nil
	if _, p, err := fs.search().find(); err != nil || p != "/opt/nccl/lib/libnccl.so.2" || len(fs.opened) != 1 {
		t.Errorf("GPIPE_NCCL=file: find = %q, %v after opening %q", p, err, fs.opened)
	}
	// A setting that does not load is an error, not a fall back to the
	// loader's or a wheel's NCCL.
	fs.env["GPIPE_NCCL"], fs.opened = "/nowhere/libnccl.so.2", nil
	_, _, err := fs.search().find()
	msg := checkNCCLError(t, err)
	if !strings.Contains(msg, "GPIPE_NCCL=/nowhere/libnccl.so.2: /nowhere/libnccl.so.2 does not load (") ||
		!strings.Contains(msg, "No such file") || !strings.Contains(msg, "or unset it") || len(fs.opened) != 1 {
		t.Errorf("error %q after opening %q", msg, fs.opened)
	}
}

// checkNCCLError checks that err is a one-line usererr.Backend error and
// returns its text.
func checkNCCLError(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	if k := usererr.KindOf(err); k != usererr.Backend {
		t.Errorf("kind %v, want Backend: %v", k, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error on several lines: %q", err)
	}
	return err.Error()
}

func TestNCCLVersion(t *testing.T) {
	for code, want := range map[int]string{21805: "2.18.5", 22105: "2.21.5", 22703: "2.27.3", 30001: "3.0.1", 2708: "2.7.8"} {
		if got := ncclVersionString(code); got != want {
			t.Errorf("ncclVersionString(%d) = %q, want %q", code, got, want)
		}
	}
	for _, code := range []int{21800, 21805, 22703, 30000} {
		if _, err := checkNCCLVersion(code, "x"); err != nil {
			t.Errorf("NCCL %s refused: %v", ncclVersionString(code), err)
		}
	}
	for _, code := range []int{21703, 21000, 2708} {
		_, err := checkNCCLVersion(code, "/w/libnccl.so.2")
		msg := checkNCCLError(t, err)
		want := fmt.Sprintf("/w/libnccl.so.2 is NCCL %s, but gpipe needs NCCL 2.18.0 or newer; install a newer NCCL", ncclVersionString(code))
		if !strings.HasPrefix(msg, want) {
			t.Errorf("error %q, want it to start %q", msg, want)
		}
	}
}

func TestNCCLErrorText(t *testing.T) {
	e := &NCCLError{Op: "ncclAllGather", Code: 4, Desc: "invalid argument", Last: "AllGather : invalid root 3\n"}
	if got, want := e.Error(), "ncclAllGather: ncclInvalidArgument (invalid argument): AllGather : invalid root 3"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&NCCLError{Op: "ncclGroupEnd", Code: 42}).Error(), "ncclGroupEnd: ncclResult 42"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := backendError("NCCL cannot connect GPUs 0, 1", "run on one GPU", &NCCLError{Op: "ncclCommInitAll", Code: 2})
	var ne *NCCLError
	if !errors.As(wrapped, &ne) || ne.Code != 2 {
		t.Errorf("the NCCLError is not reachable through %v", wrapped)
	}
}

// A library that is not NCCL: libc, which every Linux process has.
func TestNCCLNotNCCL(t *testing.T) {
	if !platformSupported {
		t.Skip("no dlopen here")
	}
	s := defaultNCCLSearch()
	s.getenv = func(k string) string {
		if k == "GPIPE_NCCL" {
			return "libc.so.6"
		}
		return ""
	}
	_, err := loadNCCL(s)
	if msg := checkNCCLError(t, err); msg != "libc.so.6 is not NCCL (it has no ncclGetVersion); "+fixNoNCCL {
		t.Errorf("error %q", msg)
	}
}

func TestLoadNCCLHere(t *testing.T) {
	info, err := LoadNCCL()
	if err == nil {
		if info.Version == "" || !strings.Contains(info.Path, "libnccl.so") {
			t.Errorf("LoadNCCL = %+v", info)
		}
		t.Skipf("NCCL %s from %s: the GPU tests use it", info.Version, info.Path)
	}
	t.Logf("LoadNCCL: %v", err)
	msg := checkNCCLError(t, err)
	if !strings.Contains(msg, "GPIPE_NCCL") {
		t.Errorf("error %q does not name GPIPE_NCCL", msg)
	}
	if _, err2 := LoadNCCL(); err2 != err {
		t.Errorf("second LoadNCCL gave %v, want the same error", err2)
	}
	if _, err2 := NewComms(nil); err2 != err {
		t.Errorf("NewComms without NCCL = %v", err)
	}
	if err := NCCLGroup(func() error { t.Error("group ran without NCCL"); return nil }); err == nil {
		t.Error("NCCLGroup without NCCL succeeded")
	}
}

// The file behind a library opened by soname: libc, which every Linux
// process has mapped.
func TestMappedFile(t *testing.T) {
	if !platformSupported {
		t.Skip("no /proc/self/maps here")
	}
	if _, err := dlopen("libc.so.6"); err != nil {
		t.Fatal(err)
	}
	p := mappedFile("libc.so.6")
	if !strings.HasPrefix(p, "/") || !strings.HasPrefix(path.Base(p), "libc.so.6") {
		t.Errorf("mappedFile(libc.so.6) = %q", p)
	}
	if p := mappedFile("libnot-a-library.so.9"); p != "" {
		t.Errorf("mappedFile of a library not loaded = %q", p)
	}
}

// NCCL reads NCCL_NVLS_ENABLE with getenv from the C environment: the
// setting must reach it, whatever it was.
func TestNCCLDisablesNVLS(t *testing.T) {
	if !platformSupported {
		t.Skip("no dlopen here")
	}
	libc, err := dlopen("libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	getenv := dlsym(libc, "getenv")
	if getenv == 0 {
		t.Fatal("libc has no getenv")
	}
	cGetenv := func(k string) string {
		b, err := cString(k)
		if err != nil {
			t.Fatal(err)
		}
		return ccallString(getenv, uintptr(unsafe.Pointer(&b[0])))
	}
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	if got := cGetenv("NCCL_NVLS_ENABLE"); got != "1" {
		t.Fatalf("C getenv after t.Setenv = %q: Go's environment does not reach C's here", got)
	}
	if err := disableNVLS(); err != nil {
		t.Fatal(err)
	}
	if got, goGot := cGetenv("NCCL_NVLS_ENABLE"), os.Getenv("NCCL_NVLS_ENABLE"); got != "0" || goGot != "0" {
		t.Errorf("NCCL_NVLS_ENABLE after disableNVLS: C %q, Go %q; want 0", got, goGot)
	}
}

func TestNCCLArguments(t *testing.T) {
	for typ, size := range map[NCCLType]int64{NCCLInt8: 1, NCCLUint8: 1, NCCLInt32: 4, NCCLUint32: 4, NCCLFloat32: 4,
		NCCLInt64: 8, NCCLUint64: 8, NCCLFloat64: 8, 6: 0, 9: 0, -1: 0} {
		if got := typ.Size(); got != size {
			t.Errorf("NCCLType(%d).Size() = %d, want %d", typ, got, size)
		}
	}
	// A Comm whose handle is never used: every call here fails its checks
	// before reaching NCCL.
	c := &Comm{h: 1, rank: 0, size: 2}
	for name, err := range map[string]error{
		"negative count": c.AllGather(nil, 0, 0, -1, NCCLInt32),
		"float16":        c.AllGather(nil, 0, 0, 1, 6),
		"root 2 of 2":    c.Broadcast(nil, 0, 0, 1, NCCLInt32, 2),
		"root -1":        c.Broadcast(nil, 0, 0, 1, NCCLInt32, -1),
		"average":        c.AllReduce(nil, 0, 0, 1, NCCLFloat32, 4),
		"send to 2 of 2": c.Send(nil, 0, 1, NCCLInt32, 2),
		"recv from -1":   c.Recv(nil, 0, 1, NCCLInt32, -1),
		"destroyed":      (&Comm{size: 2}).AllReduce(nil, 0, 0, 1, NCCLInt32, NCCLSum),
		"nil comm":       (*Comm)(nil).Send(nil, 0, 1, NCCLInt32, 0),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := (&Comm{}).Destroy(); err != nil {
		t.Errorf("Destroy of a destroyed Comm = %v", err)
	}
	if c.Rank() != 0 || c.Size() != 2 || c.Context() != nil {
		t.Error("Comm accessors")
	}
	ctx := &Context{dev: &Device{}}
	if err := CopyPeer(nil, 0, nil, 0, ctx, 8); err == nil {
		t.Error("CopyPeer with a nil context accepted")
	}
	if err := CopyPeer(nil, 0, ctx, 0, ctx, -1); err == nil {
		t.Error("CopyPeer of -1 bytes accepted")
	}
	if err := CopyPeer(nil, 0, ctx, 0, ctx, 0); err != nil {
		t.Errorf("CopyPeer of 0 bytes = %v", err)
	}
	other := &Context{dev: &Device{}}
	third := &Stream{ctx: &Context{dev: &Device{}}, h: 1}
	if err := CopyPeer(third, 0, ctx, 0, other, 8); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("CopyPeer on a third GPU's stream = %v", err)
	}
	if err := ctx.EnablePeerAccess(ctx); err != nil {
		t.Errorf("EnablePeerAccess of itself = %v", err)
	}
	if _, err := P2PLink(ctx.dev, ctx.dev); err == nil {
		t.Error("P2PLink of a GPU with itself accepted")
	}
	if ok, err := CanAccessPeer(ctx.dev, ctx.dev); !ok || err != nil {
		t.Errorf("CanAccessPeer of a GPU with itself = %v, %v", ok, err)
	}
}

func TestNeedDriverSymbol(t *testing.T) {
	if needDriverSymbol(1, "x") != nil {
		t.Error("a bound symbol is missing")
	}
	err := needDriverSymbol(0, "cuMemcpyPeerAsync")
	if msg := checkNCCLError(t, err); !strings.Contains(msg, "lacks cuMemcpyPeerAsync") || !strings.Contains(msg, "update the NVIDIA driver") {
		t.Errorf("error %q", msg)
	}
}
