package sink

import (
	"context"
	"crypto/sha256"
	"hash"
	"path"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/usererr"
)

// An s3:// output is a multipart upload (objstore.Upload): parts go up as
// the writer fills them, and the object appears under its key only when
// the upload is completed, so that a failed or interrupted job leaves no
// partial object (the upload is aborted, and its parts deleted). A process
// killed outright cannot abort its upload: the parts stay, invisible and
// billed, until a bucket lifecycle rule (AbortIncompleteMultipartUpload)
// removes them.

// s3Target is one object being written.
type s3Target struct {
	ctx context.Context
	st  *objstore.S3
	loc objstore.Location
	up  *objstore.Upload
	sum hash.Hash // nil without a checksum
}

// openS3 starts the upload of the object at path.
func openS3(ctx context.Context, st *objstore.S3, path string, checksum bool) (*s3Target, error) {
	loc, err := objstore.Parse(path)
	if err != nil {
		return nil, err
	}
	up, err := st.Create(ctx, loc)
	if err != nil {
		return nil, err
	}
	t := &s3Target{ctx: ctx, st: st, loc: loc, up: up}
	if checksum {
		t.sum = sha256.New()
	}
	return t, nil
}

func (t *s3Target) Write(p []byte) (int, error) {
	n, err := t.up.Write(p)
	if t.sum != nil {
		t.sum.Write(p[:n])
	}
	return n, err
}

func (t *s3Target) finish() error { return t.up.Finish() }

// publish completes the upload, with the checksum object NAME.sha256
// beside it (an old one removed first, as for a file).
func (t *s3Target) publish() error {
	sidecar := t.loc.Child(t.loc.Key + ChecksumSuffix)
	if err := t.st.Delete(t.ctx, sidecar); err != nil {
		t.up.Abort()
		return err
	}
	if err := t.up.Publish(); err != nil {
		return err
	}
	if t.sum != nil {
		return t.st.Put(t.ctx, sidecar, []byte(ChecksumLine(t.sum.Sum(nil), path.Base(t.loc.Key))))
	}
	return nil
}

func (t *s3Target) remove() { t.up.Abort() }

// openTarget opens where a file output's bytes go: an S3 object, or a
// file (output.go).
func openTarget(ctx context.Context, path string, checksum bool, store objstore.Options) (target, error) {
	if !objstore.IsRemote(path) {
		return openOutput(path, checksum)
	}
	if !objstore.IsS3(path) {
		return nil, usererr.New(usererr.Usage, "cannot write to an http(s) URL: gpipe reads them but writes files and s3:// objects",
			"write to a file or an s3:// object")
	}
	st, err := objstore.NewS3(ctx, store)
	if err != nil {
		return nil, err
	}
	return openS3(ctx, st, path, checksum)
}
