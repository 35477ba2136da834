package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/ingest/objstore/s3test"
	"github.com/gpipe/gpipe/internal/usererr"
)

// quick are options for tests: short waits between attempts, and a stall
// cut soon (no test measures time: these only keep the tests short).
func quick() objstore.Options {
	return objstore.Options{MaxAttempts: 3, MaxBackoff: time.Millisecond, StallTimeout: 200 * time.Millisecond, PartSize: 64 << 10}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func open(t *testing.T, srv *s3test.Server, url string, opts objstore.Options) *objstore.Object {
	t.Helper()
	st, err := objstore.NewS3(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := objstore.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestReadRanges(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := randomBytes(3<<20 + 123)
	srv.Put("bkt", "dir/x.bin", data)
	o := open(t, srv, "s3://bkt/dir/x.bin", quick())
	if o.Size() != int64(len(data)) {
		t.Fatalf("size %d, want %d", o.Size(), len(data))
	}
	srv.ResetLog()
	// A footer's reads: the last 8 bytes, then what they point at; and the
	// magic at the head. Two requests in all, one an end.
	for _, off := range []int64{o.Size() - 8, o.Size() - 5000, 0, 100} {
		p := make([]byte, 8)
		if _, err := o.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, data[off:off+8]) {
			t.Fatalf("ReadAt %d: wrong bytes", off)
		}
	}
	if n := srv.GetsOf("x.bin"); n != 2 {
		t.Errorf("%d GETs for reads at both ends, want 2 (one an end)", n)
	}
	// A range in the middle streams in one request.
	srv.ResetLog()
	r := o.RangeReader(1<<20, 1<<20)
	got, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(got, data[1<<20:2<<20]) {
		t.Fatalf("RangeReader: %v, equal %v", err, bytes.Equal(got, data[1<<20:2<<20]))
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Range != fmt.Sprintf("bytes=%d-%d", 1<<20, 2<<20-1) {
		t.Errorf("requests %+v, want one GET of bytes=1048576-2097151", reqs)
	}
	all, err := o.ReadAll()
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("ReadAll: %v", err)
	}
	// Past the end.
	if _, err := o.ReadAt(make([]byte, 4), o.Size()); err != io.EOF {
		t.Errorf("ReadAt at the end: %v, want io.EOF", err)
	}
}

func TestRetriesServerErrors(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := randomBytes(300 << 10)
	srv.Put("bkt", "x.bin", data)
	o := open(t, srv, "s3://bkt/x.bin", quick())
	f := &s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 2, Status: 503, Code: "SlowDown"}
	srv.AddFault(f)
	got, err := io.ReadAll(o.RangeReader(0, o.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after two 503s: %v", err)
	}
	if srv.Hits(f) != 2 {
		t.Errorf("fault hit %d times, want 2", srv.Hits(f))
	}
	// Failing every attempt: one clean error naming the object.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 100, Status: 500, Code: "InternalError"})
	_, err = io.ReadAll(o.RangeReader(0, 1000))
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("error %v (%T), want a usererr.Error", err, err)
	}
	msg := err.Error()
	for _, want := range []string{"s3://bkt/x.bin", "500", "after 3 attempts", "run the job again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
}

func TestResumesCutBody(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := randomBytes(2 << 20)
	srv.Put("bkt", "x.bin", data)
	o := open(t, srv, "s3://bkt/x.bin", quick())
	srv.ResetLog()
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 2, CutAfter: 100 << 10})
	got, err := io.ReadAll(o.RangeReader(0, o.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read across two cut connections: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[1].Range != fmt.Sprintf("bytes=%d-%d", 100<<10, len(data)-1) {
		t.Errorf("requests %+v: want the second to resume at byte %d", reqs, 100<<10)
	}
	// Cut every time with nothing sent: an error after MaxAttempts.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 100, CutAfter: 0})
	_, err = io.ReadAll(o.RangeReader(0, o.Size()))
	if err == nil || !strings.Contains(err.Error(), "s3://bkt/x.bin") || !strings.Contains(err.Error(), "broke off 3 times") {
		t.Fatalf("error %v: want one that names the object and the attempts", err)
	}
}

func TestStalledServer(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := randomBytes(1 << 20)
	srv.Put("bkt", "x.bin", data)
	o := open(t, srv, "s3://bkt/x.bin", quick())
	// One answer that never comes, one body that stops halfway: both cut
	// by the stall timeout and tried again.
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 1, Stall: true})
	srv.AddFault(&s3test.Fault{Match: s3test.GetOf("x.bin"), Times: 1, Stall: true, StallAfter: 4096})
	got, err := io.ReadAll(o.RangeReader(0, o.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read past two stalls: %v", err)
	}
}

func TestMissing(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	st, err := objstore.NewS3(context.Background(), quick())
	if err != nil {
		t.Fatal(err)
	}
	_ = srv
	for _, url := range []string{"s3://bkt/nope.parquet", "s3://nobucket/x.parquet"} {
		loc, _ := objstore.Parse(url)
		_, err := st.Open(context.Background(), loc)
		if !errors.Is(err, usererr.ErrNotFound) || !errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), url) {
			t.Errorf("%s: %v, want a not-found error naming it", url, err)
		}
	}
}

func upload(t *testing.T, opts objstore.Options, url string) *objstore.Upload {
	t.Helper()
	st, err := objstore.NewS3(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := objstore.Parse(url)
	u, err := st.Create(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestUpload(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	data := randomBytes(64<<10*3 + 777)
	u := upload(t, quick(), "s3://bkt/out/r.parquet")
	for off := 0; off < len(data); off += 10000 {
		if _, err := u.Write(data[off:min(off+10000, len(data))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := u.Finish(); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Get("bkt", "out/r.parquet"); ok {
		t.Fatal("the object is visible before Publish")
	}
	if err := u.Publish(); err != nil {
		t.Fatal(err)
	}
	got, ok := srv.Get("bkt", "out/r.parquet")
	if !ok || !bytes.Equal(got, data) {
		t.Fatalf("object after Publish: found %v, equal %v", ok, bytes.Equal(got, data))
	}
	parts := 0
	for _, r := range srv.Requests() {
		if r.Method == http.MethodPut && strings.Contains(r.Query, "partNumber") {
			parts++
		}
	}
	if parts != 4 {
		t.Errorf("%d parts uploaded, want 4", parts)
	}
	if ups := srv.Uploads("bkt"); len(ups) != 0 {
		t.Errorf("uploads left: %v", ups)
	}
}

func TestUploadFailureLeavesNothing(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	srv.AddFault(&s3test.Fault{Match: s3test.PartUploadOf("r.parquet"), Times: 1000, Status: 503, Code: "ServiceUnavailable"})
	u := upload(t, quick(), "s3://bkt/r.parquet")
	var err error
	for range 5 {
		if _, err = u.Write(randomBytes(64 << 10)); err != nil {
			break
		}
	}
	if err == nil {
		err = u.Publish()
	} else {
		u.Abort()
	}
	if err == nil || !strings.Contains(err.Error(), "s3://bkt/r.parquet") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v: want one naming the object and the status", err)
	}
	if _, ok := srv.Get("bkt", "r.parquet"); ok {
		t.Error("a failed upload left an object")
	}
	if ups := srv.Uploads("bkt"); len(ups) != 0 {
		t.Errorf("a failed upload was not aborted: %v", ups)
	}
	// An upload given up by its writer leaves nothing either.
	srv2 := upload(t, quick(), "s3://bkt/s.parquet")
	srv2.Write([]byte("half a file"))
	srv2.Abort()
	if _, ok := srv.Get("bkt", "s.parquet"); ok || len(srv.Uploads("bkt")) != 0 {
		t.Error("an aborted upload left an object or parts")
	}
}

func TestHTTPRanges(t *testing.T) {
	data := randomBytes(2<<20 + 5)
	var gets int
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/edges.parquet":
			gets++
			if gets == 2 {
				w.WriteHeader(http.StatusBadGateway) // retried
				return
			}
			http.ServeContent(w, r, "edges.parquet", time.Time{}, bytes.NewReader(data))
		case "/whole":
			w.Write(data[:100])
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	h := objstore.NewHTTP(quick())
	loc, _ := objstore.Parse(ts.URL + "/edges.parquet")
	o, err := h.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.ReadAll()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll over HTTP: %v", err)
	}
	loc, _ = objstore.Parse(ts.URL + "/whole")
	if _, err := h.Open(context.Background(), loc); err == nil || !strings.Contains(err.Error(), "byte ranges") {
		t.Errorf("a server without ranges: %v", err)
	}
	loc, _ = objstore.Parse(ts.URL + "/missing.parquet")
	if _, err := h.Open(context.Background(), loc); !errors.Is(err, usererr.ErrNotFound) {
		t.Errorf("a missing file: %v", err)
	}
}
