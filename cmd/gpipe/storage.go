package main

import (
	"fmt"
	"net/url"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/ingest/objstore"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/sink"
)

// The flags of where data lives and how outputs are written: object
// stores (run, gen, bench) and the writer's settings (run, gen).

// s3EndpointFlag is --s3-endpoint.
func s3EndpointFlag() cli.Flag {
	return &cli.StringFlag{Name: "s3-endpoint", EnvVars: []string{"GPIPE_S3_ENDPOINT"},
		Usage: "`URL` of an S3-compatible store for s3:// inputs and outputs (MinIO, Ceph, R2...; default: AWS_ENDPOINT_URL, else AWS's); " +
			"credentials come from the AWS SDK's chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role)"}
}

// writeFlags are the output's settings, in run and gen.
func writeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "compression", Usage: "output codec: Parquet zstd (default), snappy, gzip or none; Arrow IPC none (default), zstd or lz4"},
		&cli.IntFlag{Name: "row-group-size", Usage: "rows in a Parquet row group (or an Arrow IPC record batch)",
			DefaultText: fmt.Sprintf("%d for Parquet, %d for Arrow IPC", sink.DefaultParquetRowGroup, sink.DefaultIPCBatch)},
		&cli.Int64Flag{Name: "max-rows-per-file", Usage: "rows in one part file of a directory output (--output DIR/ or s3://BUCKET/PREFIX/)",
			DefaultText: "sized for part files of 128 to 512 MiB"},
		s3EndpointFlag(),
	}
}

// storeOptions reads --s3-endpoint.
func storeOptions(c *cli.Context) (objstore.Options, error) {
	ep := c.String("s3-endpoint")
	if ep == "" {
		return objstore.Options{}, nil
	}
	u, err := url.Parse(ep)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return objstore.Options{}, usererr.New(usererr.Usage, fmt.Sprintf("--s3-endpoint %q is not an http:// or https:// URL", ep),
			"name the store's URL, as http://127.0.0.1:9000 or https://storage.example.com")
	}
	return objstore.Options{Endpoint: ep}, nil
}

// sinkOptions are the writer's options from the flags of run and gen.
func sinkOptions(c *cli.Context, e *env) (sink.Options, error) {
	store, err := storeOptions(c)
	if err != nil {
		return sink.Options{}, err
	}
	for _, name := range []string{"row-group-size", "max-rows-per-file"} {
		if c.IsSet(name) && c.Int64(name) <= 0 {
			return sink.Options{}, usererr.New(usererr.Usage, fmt.Sprintf("--%s %d must be at least 1", name, c.Int64(name)), "leave it out for the default")
		}
	}
	if c.IsSet("max-rows-per-file") && !sink.IsDirectory(c.String("output")) {
		return sink.Options{}, usererr.New(usererr.Usage, fmt.Sprintf("--max-rows-per-file applies to a directory output, not %s", c.String("output")),
			"end the output with / (DIR/ or s3://BUCKET/PREFIX/) to write part files, or leave it out")
	}
	return sink.Options{
		Format: c.String("output-format"), Stdout: e.stdout, Checksum: c.Bool("checksum"),
		Compression: c.String("compression"), BatchRows: c.Int("row-group-size"),
		MaxRowsPerFile: c.Int64("max-rows-per-file"), Store: store,
	}, nil
}
