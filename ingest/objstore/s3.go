package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/gpipe/gpipe/internal/usererr"
)

// S3 is a client of one S3 or S3-compatible store.
type S3 struct {
	client   *s3.Client
	opts     Options
	endpoint string // the custom endpoint, for messages; "" for AWS's
}

// NewS3 makes a client with the SDK's standard configuration (credentials,
// region, AWS_ENDPOINT_URL) and opts. A custom endpoint is addressed
// path-style (http://host/bucket/key), as S3-compatible stores expect, and
// gets only the checksums a request requires, which not all of them take.
func NewS3(ctx context.Context, opts Options) (*S3, error) {
	opts = opts.withDefaults()
	load := []func(*config.LoadOptions) error{
		config.WithHTTPClient(newS3HTTPClient(opts)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = opts.MaxBackoff
				// Many parts of one job may fail at once against a
				// struggling server: each request gets all its attempts.
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, usererr.New(usererr.Usage, "cannot load the AWS configuration: "+err.Error(),
			"check AWS_PROFILE, AWS_CONFIG_FILE and the files they name")
	}
	if cfg.Region == "" {
		// S3-compatible stores take any region; AWS's own answers a wrong
		// one with an error that names AWS_REGION (errorOf).
		cfg.Region = "us-east-1"
	}
	s := &S3{opts: opts}
	s.client = s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		if o.BaseEndpoint != nil && !strings.Contains(*o.BaseEndpoint, "amazonaws.com") {
			s.endpoint = *o.BaseEndpoint
			o.UsePathStyle = true
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return s, nil
}

// Info is an object as a listing or HEAD gives it.
type Info struct {
	Loc  Location
	Size int64
	// ETag is the object's version as the store names it: reads send it in
	// If-Match, so that an object replaced while it is read fails the read
	// instead of mixing two versions.
	ETag string
}

// Stat is the object at loc.
func (s *S3) Stat(ctx context.Context, loc Location) (Info, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return Info{}, s.errorOf(loc, "cannot read", err)
	}
	return Info{Loc: loc, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}, nil
}

// List is every object whose key starts with loc.Key, in key order.
func (s *S3) List(ctx context.Context, loc Location) ([]Info, error) {
	var infos []Info
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &loc.Bucket, Prefix: &loc.Key})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, s.errorOf(loc, "cannot list", err)
		}
		for _, o := range page.Contents {
			infos = append(infos, Info{Loc: loc.Child(aws.ToString(o.Key)), Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)})
		}
	}
	return infos, nil
}

// getRange starts a GET of n bytes at off of the object (one request, the
// SDK's retries included, until its body starts).
func (s *S3) getRange(ctx context.Context, info Info, off, n int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &info.Loc.Bucket, Key: &info.Loc.Key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))}
	if info.ETag != "" {
		in.IfMatch = aws.String(info.ETag)
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, s.errorOf(info.Loc, "cannot read", err)
	}
	return out.Body, nil
}

// Delete removes the object at loc.
func (s *S3) Delete(ctx context.Context, loc Location) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return s.errorOf(loc, "cannot remove", err)
	}
	return nil
}

// Put writes a small object whole (a checksum file, a _SUCCESS marker).
func (s *S3) Put(ctx context.Context, loc Location, data []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &loc.Bucket, Key: &loc.Key,
		Body: strings.NewReader(string(data)), ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		return s.errorOf(loc, "cannot write", err)
	}
	return nil
}

// where is the store, for fixes: the custom endpoint, or S3.
func (s *S3) where() string {
	if s.endpoint != "" {
		return "the store at " + s.endpoint
	}
	return "S3"
}

// errorOf turns an SDK error of an operation on loc into a user error of
// one line that names the object and says what to do. A canceled ctx is
// returned as it is.
func (s *S3) errorOf(loc Location, what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if ctxErr := contextErr(err); ctxErr != nil {
			return ctxErr
		}
	}
	e := &usererr.Error{Kind: usererr.Internal, File: loc.URL, Row: -1, Err: err}
	code, status := apiCode(err)
	switch {
	case code == "NoSuchBucket":
		e.Kind, e.Problem = usererr.NotFound, fmt.Sprintf("%s: the bucket %s does not exist", what, loc.Bucket)
		e.Fix = "check the bucket's name, and the endpoint (--s3-endpoint, AWS_ENDPOINT_URL)"
		e.Err = errors.Join(ErrNotFound, err)
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		e.Kind, e.Problem = usererr.NotFound, what+": no such object"
		e.Fix = "check the key (list the objects with: aws s3 ls " + parentOf(loc) + ")"
		e.Err = errors.Join(ErrNotFound, err)
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		e.Kind, e.Problem = usererr.Input, what+": the object was replaced while it was being read"
		e.Fix = "run the job again once the object is no longer being written"
	case code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || status == http.StatusForbidden:
		e.Kind, e.Problem = usererr.Usage, fmt.Sprintf("%s: access denied (%s)", what, firstNonEmpty(code, "HTTP 403"))
		e.Fix = "check the credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID) and that they may use the bucket"
	case code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" || status == http.StatusMovedPermanently:
		e.Kind, e.Problem = usererr.Usage, what+": the bucket is in another region"
		e.Fix = "set AWS_REGION to the bucket's region"
	case isCredentialsError(err):
		e.Kind, e.Problem = usererr.Usage, what+": no AWS credentials were found"
		e.Fix = "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance role gives them"
	default:
		e.Problem = fmt.Sprintf("%s: %s", what, causeOf(err, s.opts.MaxAttempts))
		e.Fix = "check that " + s.where() + " is reachable and working, then run the job again"
	}
	return e
}

// apiCode is the S3 error code and HTTP status of err, where it has them.
func apiCode(err error) (string, int) {
	var code string
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return code, re.HTTPStatusCode()
	}
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return "NoSuchKey", http.StatusNotFound
	}
	return code, 0
}

func isCredentialsError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to refresh cached credentials") || strings.Contains(msg, "get credentials") ||
		strings.Contains(msg, "no EC2 IMDS role found") || strings.Contains(msg, "static credentials are empty")
}

// causeOf says what went wrong with a request, after how many attempts.
func causeOf(err error, attempts int) string {
	var me *retry.MaxAttemptsError
	if errors.As(err, &me) {
		return fmt.Sprintf("%s (after %d attempts)", lastCause(me.Err), me.Attempt)
	}
	if code, status := apiCode(err); status >= 500 {
		return fmt.Sprintf("the server failed with HTTP %d %s", status, code)
	}
	return lastCause(err)
}

// lastCause is the innermost words of an SDK error chain ("operation
// error S3: GetObject, https response error StatusCode: 503, ..., api
// error SlowDown: Please reduce your request rate." says the last).
func lastCause(err error) string {
	code, status := apiCode(err)
	if status != 0 {
		if code != "" {
			return fmt.Sprintf("HTTP %d %s", status, code)
		}
		return fmt.Sprintf("HTTP %d", status)
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "the server closed the connection"
	}
	return err.Error()
}

// contextErr is the context error at the bottom of err, if any.
func contextErr(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parentOf is the "directory" of loc, for an `aws s3 ls` in a fix.
func parentOf(loc Location) string {
	key := loc.Key
	if i := strings.LastIndex(strings.TrimSuffix(key, "/"), "/"); i >= 0 {
		return "s3://" + loc.Bucket + "/" + key[:i+1]
	}
	return "s3://" + loc.Bucket + "/"
}
