package objstore

import (
	"context"
	"net"
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// newS3HTTPClient is newHTTPClient as the SDK builds it, so that its own
// settings (AWS_CA_BUNDLE's certificates) still apply: the SDK's read
// timeout for stalled reads, the stall wrapper for writes.
func newS3HTTPClient(opts Options) *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithReadTimeout(opts.StallTimeout).WithTransportOptions(func(tr *http.Transport) {
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{Timeout: opts.StallTimeout, KeepAlive: 30 * time.Second}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallConn{Conn: c, timeout: opts.StallTimeout}, nil
		}
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
	})
}

// newHTTPClient is the HTTP client of every store: connections that fail a
// read or a write which makes no progress for Options.StallTimeout (so that
// a server that stops answering, or stops reading an upload, fails the
// attempt, which is then retried, instead of hanging the job), and enough
// idle connections kept for Concurrency requests to each of a few objects.
func newHTTPClient(opts Options) *http.Client {
	dialer := &net.Dialer{Timeout: opts.StallTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &stallConn{Conn: c, timeout: opts.StallTimeout}, nil
		},
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.StallTimeout,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		// S3 answers a wrong region with a redirect the SDK reports better
		// than following it would; a plain HTTPS server's redirects are
		// followed (CheckRedirect nil for those: see httpSource).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// stallConn is a connection whose reads and writes fail once they make no
// progress for timeout: the deadline moves before each call, so a slow but
// moving transfer goes on.
type stallConn struct {
	net.Conn
	timeout time.Duration
}

func (c *stallConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}
