package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

func devicesCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "list the NVIDIA GPUs gpipe can use, or say why there are none; NCCL and peer access between GPUs",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the devices' attributes, NCCL and the links between GPUs as JSON on stdout"}},
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
					json.NewEncoder(e.stdout).Encode(map[string]any{"driver_version": "", "devices": []gpu.Attributes{},
						"nccl": ncclStatus(), "peers": []peer{}, "error": err.Error()})
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
					"nccl": ncclStatus(), "peers": peers(info.Devices),
				})
			}
			fmt.Fprintf(e.stdout, "NVIDIA driver for CUDA %s\n", info.DriverVersionString())
			if n := ncclStatus(); n.Error != "" {
				fmt.Fprintf(e.stdout, "NCCL not loaded: %s\n", n.Error)
			} else {
				fmt.Fprintf(e.stdout, "NCCL %s (%s)\n", n.Version, n.Path)
			}
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
			if err := tw.Flush(); err != nil {
				return err
			}
			return printPeers(e, info.Devices)
		},
	}
}

// ncclJSON is NCCL as devices reports it: the version and file loaded, or
// why none was.
type ncclJSON struct {
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Error   string `json:"error,omitempty"`
}

func ncclStatus() ncclJSON {
	info, err := gpu.LoadNCCL()
	if err != nil {
		return ncclJSON{Error: err.Error()}
	}
	return ncclJSON{Version: info.Version, Path: info.Path}
}

// peer is the link from one GPU to another.
type peer struct {
	From int `json:"from"`
	To   int `json:"to"`
	gpu.PeerLink
	Error string `json:"error,omitempty"`
}

// peers are the links between every ordered pair of distinct GPUs.
func peers(devs []*gpu.Device) []peer {
	out := []peer{}
	for _, a := range devs {
		for _, b := range devs {
			if a == b {
				continue
			}
			p := peer{From: a.Ordinal, To: b.Ordinal}
			var err error
			if p.PeerLink, err = gpu.P2PLink(a, b); err != nil {
				p.Error = err.Error()
			}
			out = append(out, p)
		}
	}
	return out
}

// printPeers prints, with two GPUs or more, which reaches which.
func printPeers(e *env, devs []*gpu.Device) error {
	if len(devs) < 2 {
		return nil
	}
	var ordinals []int
	for _, d := range devs {
		ordinals = append(ordinals, d.Ordinal)
	}
	return writePeerMatrix(e.stdout, ordinals, peers(devs))
}

// writePeerMatrix writes the links ps between the GPUs of ordinals as a
// matrix from rows to columns.
func writePeerMatrix(w io.Writer, ordinals []int, ps []peer) error {
	cells := map[[2]int]string{}
	for _, p := range ps {
		cell := "no"
		switch {
		case p.Error != "":
			cell = "? (" + p.Error + ")"
		case p.Access && p.Atomics:
			cell = fmt.Sprintf("yes, atomics, rank %d", p.PerformanceRank)
		case p.Access:
			cell = fmt.Sprintf("yes, rank %d", p.PerformanceRank)
		}
		cells[[2]int{p.From, p.To}] = cell
	}
	fmt.Fprintln(w, "\npeer access from row to column (direct access, native atomics, the driver's performance rank):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "from\\to")
	for _, b := range ordinals {
		fmt.Fprintf(tw, "\t%d", b)
	}
	fmt.Fprintln(tw)
	for _, a := range ordinals {
		fmt.Fprintf(tw, "%d", a)
		for _, b := range ordinals {
			cell := "-"
			if a != b {
				if cell = cells[[2]int{a, b}]; cell == "" {
					cell = "?"
				}
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
