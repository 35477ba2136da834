package objstore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpipe/gpipe/internal/usererr"
)

// HTTP reads files served over HTTP(S) by ranged GETs: one file a URL (an
// HTTP server has no listing to read a dataset from).
type HTTP struct {
	client *http.Client
	opts   Options
}

// NewHTTP is a reader of http(s) URLs with opts' retries and timeouts.
func NewHTTP(opts Options) *HTTP {
	opts = opts.withDefaults()
	c := newHTTPClient(opts)
	c.CheckRedirect = nil // follow them, as a browser does
	return &HTTP{client: c, opts: opts}
}

// Open is the file at loc, for reading: its size comes from a first
// request of one byte, which also checks that the server serves ranges.
func (h *HTTP) Open(ctx context.Context, loc Location) (*Object, error) {
	info := Info{Loc: loc}
	resp, err := h.get(ctx, info, 0, 1)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	total, ok := rangeTotal(resp.Header.Get("Content-Range"))
	if resp.StatusCode != http.StatusPartialContent || !ok {
		return nil, &usererr.Error{Kind: usererr.Input, File: loc.URL, Row: -1,
			Problem: "the server does not serve byte ranges (it answered a ranged GET with the whole file)",
			Fix:     "download the file and read it from disk"}
	}
	info.Size = total
	if etag := resp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		info.ETag = etag
	}
	return &Object{ctx: ctx, src: h, info: info, opts: h.opts}, nil
}

// rangeTotal reads the size from a Content-Range "bytes 0-0/SIZE".
func rangeTotal(cr string) (int64, bool) {
	_, total, ok := strings.Cut(cr, "/")
	if !ok || total == "*" {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil && n >= 0
}

func (h *HTTP) where() string { return "the server" }

func (h *HTTP) getRange(ctx context.Context, info Info, off, n int64) (io.ReadCloser, error) {
	resp, err := h.get(ctx, info, off, n)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, h.statusError(info.Loc, resp)
	}
	return resp.Body, nil
}

// get sends a ranged GET, retrying a failed connection, a timeout, a 5xx
// and a 429 with backoff; other answers are the caller's to judge, but
// for 4xx, which are errors.
func (h *HTTP) get(ctx context.Context, info Info, off, n int64) (*http.Response, error) {
	var last error
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, info.Loc.URL, nil)
		if err != nil {
			return nil, errAddress(info.Loc.URL, err.Error())
		}
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
		// The body is the file's bytes as stored, not recompressed.
		req.Header.Set("Accept-Encoding", "identity")
		if info.ETag != "" {
			req.Header.Set("If-Match", info.ETag)
		}
		resp, err := h.client.Do(req)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			last = err
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			resp.Body.Close()
			last = fmt.Errorf("HTTP %s", resp.Status)
		case resp.StatusCode >= 400:
			resp.Body.Close()
			return nil, h.statusError(info.Loc, resp)
		default:
			return resp, nil
		}
		if attempt >= h.opts.MaxAttempts {
			return nil, &usererr.Error{Kind: usererr.Internal, File: info.Loc.URL, Row: -1,
				Problem: fmt.Sprintf("cannot read: %v (after %d attempts)", last, attempt),
				Fix:     "check that the server is reachable and working, then run the job again", Err: last}
		}
		if err := sleep(ctx, backoff(attempt, h.opts.MaxBackoff)); err != nil {
			return nil, err
		}
	}
}

// statusError is the error of an answer that no retry changes.
func (h *HTTP) statusError(loc Location, resp *http.Response) error {
	e := &usererr.Error{Kind: usererr.Input, File: loc.URL, Row: -1,
		Problem: "cannot read: the server answered " + resp.Status, Fix: "check the URL"}
	switch resp.StatusCode {
	case http.StatusNotFound, http.StatusGone:
		e.Kind, e.Err = usererr.NotFound, ErrNotFound
	case http.StatusUnauthorized, http.StatusForbidden:
		e.Kind, e.Fix = usererr.Usage, "the server refuses the file to gpipe, which sends no credentials over HTTP; download it and read it from disk"
	case http.StatusPreconditionFailed:
		e.Problem, e.Fix = "cannot read: the file was replaced while it was being read", "run the job again"
	case http.StatusRequestedRangeNotSatisfiable:
		e.Problem, e.Fix = "cannot read: the file is shorter than the server first said", "run the job again"
	}
	return e
}
