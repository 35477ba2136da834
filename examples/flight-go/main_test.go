package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/gpipe/gpipe/serve"
)

// TestExample runs the example against a server on a loopback port, so
// that it keeps working as the service changes.
func TestExample(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(serve.Config{Backend: "cpu", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	if err := run(lis.Addr().String(), "../data/karate.parquet", "", 3); err != nil {
		t.Fatal(err)
	}
}
