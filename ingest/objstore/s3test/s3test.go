// Package s3test starts a real S3-compatible server (gofakes3 over
// net/http) on a loopback port for tests, in front of which faults can be
// set: error answers, connections cut mid-body, answers that stall. The
// SDK and gpipe's store code talk to it over HTTP as to any S3-compatible
// store; nothing of the client is mocked.
package s3test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a gofakes3 server on 127.0.0.1.
type Server struct {
	URL    string
	t      testing.TB
	client *s3.Client

	done   chan struct{} // closed when the test ends
	mu     sync.Mutex
	faults []*Fault
	log    []Request
}

// Request is a request the server saw.
type Request struct {
	Method, Path, Query, Range string
}

// Fault is what the server does, instead of answering, to the next Times
// requests that Match.
type Fault struct {
	Match func(r *http.Request) bool
	Times int
	// Status answers with this HTTP status and an S3 error (Code).
	Status int
	Code   string
	// CutAfter sends the answer's headers and this many bytes of its
	// body, then closes the connection (when Status is 0 and CutAfter >= 0).
	CutAfter int
	// Stall sends nothing (or, with StallAfter > 0, that many bytes of the
	// body) and waits until the client goes away.
	Stall      bool
	StallAfter int
	hits       int
}

// Start starts a server for the test, stopped at its end, and points the
// AWS SDK's environment at it: AWS_ENDPOINT_URL, static credentials, a
// region, no shared config files and no instance metadata (so that
// nothing but the loopback server is ever asked).
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "gpipe-test", "AWS_SECRET_ACCESS_KEY": "gpipe-test-secret",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": "/nonexistent/gpipe-test", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/gpipe-test",
		"AWS_PROFILE": "", "AWS_SESSION_TOKEN": "", "AWS_ENDPOINT_URL_S3": "",
	} {
		t.Setenv(k, v)
	}
	faker := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.DiscardLog()))
	s := &Server{t: t, done: make(chan struct{})}
	srv := httptest.NewUnstartedServer(s.wrap(faker.Server()))
	// gofakes3 writes an error status after a body the faults cut short.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.Start()
	t.Cleanup(func() {
		close(s.done)
		srv.Close()
	})
	s.URL = srv.URL
	t.Setenv("AWS_ENDPOINT_URL", srv.URL)
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})
	for _, b := range buckets {
		s.CreateBucket(b)
	}
	return s
}

// Client is an S3 client of the server, for setting up and checking.
func (s *Server) Client() *s3.Client { return s.client }

// CreateBucket makes a bucket.
func (s *Server) CreateBucket(name string) {
	s.t.Helper()
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		s.t.Fatal(err)
	}
}

// Put stores an object.
func (s *Server) Put(bucket, key string, data []byte) {
	s.t.Helper()
	_, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		s.t.Fatal(err)
	}
}

// Get is an object's bytes, or nil and false where there is none.
func (s *Server) Get(bucket, key string) ([]byte, bool) {
	s.t.Helper()
	out, err := s.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if strings.Contains(err.Error(), "NoSuchKey") {
			return nil, false
		}
		s.t.Fatal(err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return data, true
}

// Keys lists the bucket's keys under prefix.
func (s *Server) Keys(bucket, prefix string) []string {
	s.t.Helper()
	out, err := s.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	if err != nil {
		s.t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// Uploads lists the bucket's multipart uploads that were neither
// completed nor aborted, by key.
func (s *Server) Uploads(bucket string) []string {
	s.t.Helper()
	out, err := s.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		s.t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// AddFault sets a fault; it applies to the next f.Times matching requests.
func (s *Server) AddFault(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Hits is how many requests f has been applied to.
func (s *Server) Hits(f *Fault) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.hits
}

// Requests is every request the server has seen, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// ResetLog forgets the requests seen so far.
func (s *Server) ResetLog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = nil
}

// GetsOf counts the GETs of objects whose key ends in suffix.
func (s *Server) GetsOf(suffix string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, suffix) && isObjectPath(r.Path) && !strings.Contains(r.Query, "uploadId") {
			n++
		}
	}
	return n
}

// fault is the fault r gets, if any.
func (s *Server) fault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Range: r.Header.Get("Range")})
	for _, f := range s.faults {
		if f.hits < f.Times && f.Match(r) {
			f.hits++
			return f
		}
	}
	return nil
}

func (s *Server) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := s.fault(r)
		switch {
		case f == nil:
			next.ServeHTTP(w, r)
		case f.Status != 0:
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(f.Status)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+f.Code+`</Code><Message>injected by s3test</Message></Error>`)
		case f.Stall && f.StallAfter == 0:
			// Read the request (an upload's part) first: the server sees
			// the client go away only once it has.
			io.Copy(io.Discard, r.Body)
			s.stall(r)
		default:
			limit := f.CutAfter
			if f.Stall {
				limit = f.StallAfter
			}
			cw := &cutWriter{ResponseWriter: w, left: limit}
			next.ServeHTTP(cw, r)
			if f.Stall {
				s.stall(r)
			}
			// Close the connection with the body unfinished.
			panic(http.ErrAbortHandler)
		}
	})
}

// stall waits until the client of r goes away, or the test ends.
func (s *Server) stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
}

// cutWriter passes on at most left bytes of a body, then drops the rest.
type cutWriter struct {
	http.ResponseWriter
	left int
}

// WriteHeader sends the headers at once: a cut then comes after them.
func (c *cutWriter) WriteHeader(code int) {
	c.ResponseWriter.WriteHeader(code)
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrClosedPipe
	}
	n := min(len(p), c.left)
	c.left -= n
	c.ResponseWriter.Write(p[:n])
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if n < len(p) {
		return n, io.ErrClosedPipe
	}
	return n, nil
}

// GetOf matches the GETs of objects whose key ends in suffix (not lists).
func GetOf(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, suffix) && isObjectPath(r.URL.Path) && !r.URL.Query().Has("uploadId")
	}
}

// isObjectPath says whether a path-style path names an object
// (/bucket/key), not a bucket.
func isObjectPath(path string) bool {
	_, key, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return key != ""
}

// PartUploadOf matches the part uploads of objects whose key ends in
// suffix.
func PartUploadOf(suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, suffix) && r.URL.Query().Has("partNumber")
	}
}
