package objstore

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// uploadsInFlight bounds the parts of one upload sent at once: with the
// part being filled, what an upload holds is PartSize times one more.
const uploadsInFlight = 4

// abortTimeout bounds the abort of an upload, which runs on a context of
// its own: the job's may be canceled already (that is often why).
const abortTimeout = 30 * time.Second

// Open is the object at loc, for reading, its size from a HEAD request.
func (s *S3) Open(ctx context.Context, loc Location) (*Object, error) {
	info, err := s.Stat(ctx, loc)
	if err != nil {
		return nil, err
	}
	return s.Object(ctx, info), nil
}

// Object is the object a listing gave, for reading without another
// request.
func (s *S3) Object(ctx context.Context, info Info) *Object {
	return &Object{ctx: ctx, src: s, info: info, opts: s.opts}
}

// Upload is an object being written by a multipart upload: parts go up as
// they fill, and the object appears under its key only at Publish. Write,
// Finish, Publish and Abort are for one goroutine.
type Upload struct {
	s    *S3
	loc  Location
	ctx  context.Context
	id   string
	buf  []byte
	part int32 // the number of the part being filled
	size int64

	pool  sync.Pool // part buffers
	slots chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	done  []types.CompletedPart
	err   error // the first error of a part; the upload is spent once set
	ended bool  // published or aborted
}

// Create starts a multipart upload of the object at loc. Nothing is
// visible at loc until Publish.
func (s *S3) Create(ctx context.Context, loc Location) (*Upload, error) {
	out, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &loc.Bucket, Key: &loc.Key})
	if err != nil {
		return nil, s.errorOf(loc, "cannot write", err)
	}
	return &Upload{s: s, loc: loc, ctx: ctx, id: aws.ToString(out.UploadId), part: 1,
		slots: make(chan struct{}, uploadsInFlight)}, nil
}

// Name is the object's address.
func (u *Upload) Name() string { return u.loc.URL }

// partSize is the size of part n: PartSize, doubled after every 1,000
// parts (S3 takes at most 10,000), at most 5 GiB.
func (u *Upload) partSize(n int32) int {
	return int(min(u.s.opts.PartSize<<((n-1)/1000), 5<<30))
}

// Write adds p to the object, sending each part as it fills (waiting while
// uploadsInFlight are on their way).
func (u *Upload) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if err := u.failed(); err != nil {
			return written, err
		}
		if u.buf == nil {
			u.buf = u.newBuffer()
		}
		n := min(len(p), cap(u.buf)-len(u.buf))
		u.buf = append(u.buf, p[:n]...)
		p, written = p[n:], written+n
		u.size += int64(n)
		if len(u.buf) == cap(u.buf) {
			u.send()
		}
	}
	return written, nil
}

func (u *Upload) newBuffer() []byte {
	size := u.partSize(u.part)
	if b, ok := u.pool.Get().(*[]byte); ok && cap(*b) == size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// send uploads the filled buffer as the next part, on a goroutine.
func (u *Upload) send() {
	buf, n := u.buf, u.part
	u.buf, u.part = nil, u.part+1
	u.slots <- struct{}{}
	u.wg.Go(func() {
		defer func() { <-u.slots }()
		out, err := u.s.client.UploadPart(u.ctx, &s3.UploadPartInput{
			Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(buf), ContentLength: aws.Int64(int64(len(buf))),
		})
		u.mu.Lock()
		defer u.mu.Unlock()
		if err != nil {
			if u.err == nil {
				u.err = u.s.errorOf(u.loc, "cannot write", err)
			}
			return
		}
		u.done = append(u.done, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag,
			ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C, ChecksumCRC64NVME: out.ChecksumCRC64NVME,
			ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256})
		u.pool.Put(&buf)
	})
}

func (u *Upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// Finish sends the last part and waits for every part: after it, Publish
// has only to tell the store to assemble them.
func (u *Upload) Finish() error {
	if len(u.buf) > 0 {
		u.send()
	}
	u.wg.Wait()
	return u.failed()
}

// Publish makes the object visible under its key (Finish first). On an
// error the upload is aborted.
func (u *Upload) Publish() error {
	if err := u.Finish(); err != nil {
		u.Abort()
		return err
	}
	u.ended = true
	if u.size == 0 {
		// S3 refuses an upload of no parts, and gofakes3 an empty part:
		// an empty object is a plain PUT.
		u.abort()
		return u.s.Put(u.ctx, u.loc, nil)
	}
	parts := slices.Clone(u.done)
	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	_, err := u.s.client.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err != nil {
		u.abort()
		return u.s.errorOf(u.loc, "cannot write", err)
	}
	return nil
}

// Abort gives the upload up: its parts are deleted and no object appears.
// It does nothing after Publish.
func (u *Upload) Abort() {
	if u.ended {
		return
	}
	u.ended = true
	u.mu.Lock()
	if u.err == nil {
		u.err = errors.New("objstore: upload aborted")
	}
	u.mu.Unlock()
	u.wg.Wait()
	u.abort()
}

// abort deletes the upload's parts, on a context of its own.
func (u *Upload) abort() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), abortTimeout)
	defer cancel()
	_, _ = u.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &u.loc.Bucket, Key: &u.loc.Key, UploadId: &u.id})
}
