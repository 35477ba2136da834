// Command s3serve serves a directory as an S3-compatible store on a
// loopback port, for scripts/bench-datasets.sh and for trying gpipe's
// s3:// inputs and outputs without a cloud account: every directory under
// -root is a bucket, its files the objects (loaded into memory at start:
// gofakes3's in-memory backend), and what clients write stays in memory.
// It prints the endpoint's URL on its first line, then serves until killed.
//
//	s3serve -root data/            # data/lake/edges/part-0.parquet is s3://lake/edges/part-0.parquet
//	gpipe run --s3-endpoint http://127.0.0.1:PORT --input s3://lake/edges/ ...
//
// Credentials are not checked: any AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY do.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	root := flag.String("root", "", "directory whose subdirectories are the buckets")
	port := flag.Int("port", 0, "port on 127.0.0.1 (0: any free one)")
	flag.Parse()
	backend := s3mem.New()
	if *root != "" {
		if err := load(backend, *root); err != nil {
			fmt.Fprintln(os.Stderr, "s3serve:", err)
			os.Exit(1)
		}
	}
	// Loopback only: this server checks no credentials.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "s3serve:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	if err := http.Serve(ln, faker.Server()); err != nil {
		fmt.Fprintln(os.Stderr, "s3serve:", err)
		os.Exit(1)
	}
}

// load puts every file under root/BUCKET/ into the backend as an object of
// BUCKET, its key the file's path under the bucket's directory.
func load(backend *s3mem.Backend, root string) error {
	buckets, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, b := range buckets {
		if !b.IsDir() {
			continue
		}
		if err := backend.CreateBucket(b.Name()); err != nil {
			return err
		}
		dir := filepath.Join(root, b.Name())
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			_, err = backend.PutObject(b.Name(), filepath.ToSlash(rel), map[string]string{}, bytes.NewReader(data), int64(len(data)), nil)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
