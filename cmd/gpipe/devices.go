package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

func devicesCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "list the NVIDIA GPUs gpipe can use, or say why there are none",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the devices' attributes as JSON on stdout"}},
		Action: func(c *cli.Context) error {
			info, err := gpu.Available()
			if err != nil {
				// Say it as a listing would, not as a job that needs a GPU.
				var ue *usererr.Error
				if errors.As(err, &ue) {
					err = &usererr.Error{Kind: ue.Kind, Row: -1, Problem: "no usable GPU: " + ue.Problem,
						Fix: "gpipe run and bench use the CPU where there is none"}
				}
				if c.Bool("json") {
					json.NewEncoder(e.stdout).Encode(map[string]any{"driver_version": "", "devices": []gpu.Attributes{}, "error": err.Error()})
				}
				return err
			}
			if c.Bool("json") {
				var attrs []gpu.Attributes
				for _, d := range info.Devices {
					attrs = append(attrs, d.Attributes)
				}
				return json.NewEncoder(e.stdout).Encode(map[string]any{
					"driver_version": info.DriverVersionString(), "devices": attrs,
				})
			}
			fmt.Fprintf(e.stdout, "NVIDIA driver for CUDA %s\n", info.DriverVersionString())
			tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "gpu\tname\tcompute\tSMs\tmemory\tfree\tL2\tusable")
			for _, d := range info.Devices {
				free := "?"
				if f, _, err := d.MemInfo(); err == nil {
					free = bytesize.Format(f)
				}
				usable := "yes"
				if err := d.Supported(); err != nil {
					usable = "no: " + err.Error()
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", d.Ordinal, d.Name, d.ComputeCapability(), d.SMs,
					bytesize.Format(d.TotalMemory), free, bytesize.Format(int64(d.L2CacheSize)), usable)
			}
			return tw.Flush()
		},
	}
}
