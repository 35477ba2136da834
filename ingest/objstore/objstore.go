// Package objstore reads and writes objects in S3 and S3-compatible stores
// (s3://bucket/key) and reads files served over HTTP(S), for the readers of
// package ingest and the writers of package sink.
//
// Reading is by ranged GETs: an Object is an io.ReaderAt (each read one
// request, the head and tail of the object cached, so that a Parquet
// footer costs a request or two) that can also stream a range
// (RangeReader: one request for a whole column chunk) and fetch itself
// whole in parallel ranges (ReadAll, for Arrow IPC files, which are read
// from memory). A request that fails (a 5xx, a refused or reset connection,
// a body that stalls or is cut short) is retried from the byte it reached,
// up to Options.MaxAttempts times with backoff, and then is one error that
// names the object.
//
// Writing is a multipart upload (Upload): parts are uploaded as they fill,
// several at once, and the object appears only when the upload is
// completed (Publish); a failed or abandoned upload is aborted, so that no
// partial object is ever visible under its name.
//
// S3 goes through the AWS SDK for Go v2: its standard credential chain
// (environment, shared config and profiles, SSO, web identity, the
// instance's role), its retryer, and its endpoint settings
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, Options.Endpoint), with
// path-style addressing wherever the endpoint is not AWS's own.
package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Options say how to reach object stores. The zero value uses the SDK's
// defaults and the ones below.
type Options struct {
	// Endpoint is the URL of an S3-compatible store (http://127.0.0.1:9000,
	// https://storage.example.com). Empty means AWS_ENDPOINT_URL_S3 or
	// AWS_ENDPOINT_URL when set, else AWS's endpoint for the region.
	Endpoint string
	// MaxAttempts is how many times one request is tried (default 5).
	MaxAttempts int
	// MaxBackoff bounds the wait between two attempts (default 5 s; the
	// first waits are shorter, with jitter).
	MaxBackoff time.Duration
	// StallTimeout cuts a request that has sent no byte for this long
	// (no response, or a body that stopped), which then counts as a failed
	// attempt (default 30 s).
	StallTimeout time.Duration
	// PartSize is the size of an upload's parts (default 16 MiB; S3 wants
	// at least 5 MiB but for the last). Parts grow after every 1,000, so
	// that S3's 10,000 parts hold 5 TiB.
	PartSize int64
	// Concurrency is how many requests one object's reads or uploads have
	// in flight at once (default 8).
	Concurrency int
}

// Defaults of Options.
const (
	DefaultMaxAttempts  = 5
	DefaultMaxBackoff   = 5 * time.Second
	DefaultStallTimeout = 30 * time.Second
	DefaultPartSize     = 16 << 20
	DefaultConcurrency  = 8
)

func (o Options) withDefaults() Options {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = DefaultStallTimeout
	}
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	return o
}

// Location is an object store address: s3://bucket/key, or an http(s) URL.
type Location struct {
	Scheme string // "s3", "https" or "http"
	Bucket string // s3 only
	Key    string // s3: the key or prefix, without the leading slash
	URL    string // as given
}

// String is the address as the user wrote it.
func (l Location) String() string { return l.URL }

// Child is the location of key within l's bucket.
func (l Location) Child(key string) Location {
	return Location{Scheme: l.Scheme, Bucket: l.Bucket, Key: key, URL: "s3://" + l.Bucket + "/" + key}
}

// IsRemote says whether path is an object store address (s3://, https://,
// http://) rather than a local path.
func IsRemote(path string) bool {
	scheme, _, ok := strings.Cut(path, "://")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "s3", "https", "http":
		return true
	}
	return false
}

// IsS3 says whether path is an s3:// address.
func IsS3(path string) bool {
	return len(path) >= 5 && strings.EqualFold(path[:5], "s3://")
}

// Parse reads an object store address.
func Parse(path string) (Location, error) {
	scheme, rest, ok := strings.Cut(path, "://")
	if !ok {
		return Location{}, errAddress(path, "it is not a URL")
	}
	switch scheme = strings.ToLower(scheme); scheme {
	case "s3":
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return Location{}, errAddress(path, "it names no bucket")
		}
		if strings.ContainsAny(bucket, "?#") {
			return Location{}, errAddress(path, "the bucket name holds a ? or #")
		}
		return Location{Scheme: scheme, Bucket: bucket, Key: key, URL: path}, nil
	case "http", "https":
		u, err := url.Parse(path)
		if err != nil || u.Host == "" {
			return Location{}, errAddress(path, "it is not a URL")
		}
		return Location{Scheme: scheme, URL: path}, nil
	}
	return Location{}, errAddress(path, fmt.Sprintf("the scheme %s is not s3, https or http", echo.Quote(scheme)))
}

func errAddress(path, why string) error {
	return &usererr.Error{Kind: usererr.Usage, File: path, Row: -1,
		Problem: "cannot read the address: " + why,
		Fix:     "write s3://BUCKET/KEY (or s3://BUCKET/PREFIX/ for a dataset), or an https:// URL"}
}

// ErrNotFound is the cause of an error for an object or bucket that does
// not exist (errors.Is).
var ErrNotFound = errors.New("object not found")
