package convert

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
)

// hostRemote serves a host-built graph's edge arrays as a Remote would
// serve a device's, counting the fetches.
type hostRemote struct {
	g       *Graph
	fetches int
	fail    error
}

func (h *hostRemote) Fetch(out, in *CSR) error {
	h.fetches++
	if h.fail != nil {
		return h.fail
	}
	if len(out.Targets) != len(h.g.Out.Targets) || (out.Weights == nil) != (h.g.Out.Weights == nil) {
		return fmt.Errorf("fetch: out room %d targets (weights %v), want %d (%v)", len(out.Targets), out.Weights != nil, len(h.g.Out.Targets), h.g.Out.Weights != nil)
	}
	copy(out.Targets, h.g.Out.Targets)
	copy(out.Weights, h.g.Out.Weights)
	if in != nil {
		src := h.g.In()
		if len(in.Targets) != len(src.Targets) {
			return fmt.Errorf("fetch: in room %d targets, want %d", len(in.Targets), len(src.Targets))
		}
		copy(in.Targets, src.Targets)
		copy(in.Weights, src.Weights)
	}
	return nil
}

// remoteOf is host as a graph built elsewhere: its offsets, keys and stats
// on the host, its edges behind a hostRemote.
func remoteOf(host *Graph, withIn bool) (*Graph, *hostRemote) {
	r := &hostRemote{g: host}
	p := RemoteParts{
		Keys: host.Keys, OutOffsets: slices.Clone(host.Out.Offsets), Directed: host.Directed, Weighted: host.Weighted,
		Stats: host.Stats, Degrees: host.Degrees(), Remote: r,
	}
	if withIn && host.Directed {
		p.InOffsets = slices.Clone(host.In().Offsets)
	}
	return NewRemote(p), r
}

func TestRemoteGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 24; i++ {
		e := randomEdges(r, 1+r.IntN(200), r.IntN(1500))
		tab := tableOf(r, e, edges.KeyInt64, denseKeys, 1+r.IntN(3))
		opts := BuildOptions{Undirected: i%2 == 0, Weighted: i%3 != 0, Weights: FiniteWeights, BuildIn: true}
		host, err := Build(context.Background(), tab, opts)
		if err != nil {
			t.Fatal(err)
		}
		withIn := i%4 < 2
		name := fmt.Sprintf("case %d %+v in=%v", i, opts, withIn)
		g, rem := remoteOf(host, withIn)

		// Before Materialize: counts and degrees from the offsets, no fetch.
		if g.OnHost() || g.NumVertices() != host.NumVertices() || g.NumEdges() != host.NumEdges() || g.Out.NumEdges() != host.Out.NumEdges() {
			t.Fatalf("%s: remote graph says on host %v, %d vertices, %d edges; want false, %d, %d", name, g.OnHost(), g.NumVertices(), g.NumEdges(), host.NumVertices(), host.NumEdges())
		}
		for v := range uint32(g.NumVertices()) {
			if g.Out.Degree(v) != host.Out.Degree(v) {
				t.Fatalf("%s: degree of %d", name, v)
			}
		}
		if fmt.Sprint(g.Degrees()) != fmt.Sprint(host.Degrees()) {
			t.Fatalf("%s: degrees %+v, want %+v", name, g.Degrees(), host.Degrees())
		}
		if withIn || !g.Directed {
			// The in-edge offsets are there without a fetch.
			in := g.In()
			if !slices.Equal(in.Offsets, host.In().Offsets) || in.NumEdges() != host.In().NumEdges() || rem.fetches != 0 {
				t.Fatalf("%s: in-edge offsets before Materialize (fetches %d)", name, rem.fetches)
			}
		}
		if rem.fetches != 0 || len(g.Out.Targets) != 0 {
			t.Fatalf("%s: fetched %d times before anything needed the edges", name, rem.fetches)
		}

		// What builds from the edges fetches them, once.
		switch i % 3 {
		case 0:
			sh, err := g.Shards(false)
			want, _ := host.Shards(false)
			if err != nil || !slices.Equal(sh.SrcIndex, want.SrcIndex) || !slices.Equal(sh.DestIndex, want.DestIndex) {
				t.Fatalf("%s: shards of the remote graph differ (%v)", name, err)
			}
		case 1:
			if !slices.Equal(g.HubOrder().InSources, host.HubOrder().InSources) {
				t.Fatalf("%s: hubs-first in-edges differ", name)
			}
		case 2:
			if g.Weights() != host.Weights() {
				t.Fatalf("%s: weight stats %+v, want %+v", name, g.Weights(), host.Weights())
			}
		}
		if err := g.Materialize(); err != nil || !g.OnHost() || rem.fetches != 1 {
			t.Fatalf("%s: Materialize: %v, on host %v, %d fetches", name, err, g.OnHost(), rem.fetches)
		}
		sameGraph(t, name, g, host)
		sameCSR(t, name+" in", g.In(), host.In())
		if err := g.Materialize(); err != nil || rem.fetches != 1 {
			t.Fatalf("%s: a second Materialize fetched again (%d) or failed (%v)", name, rem.fetches, err)
		}
		g.Release()
	}
}

func TestRemoteGraphFetchFails(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	e := randomEdges(r, 50, 300)
	host, err := Build(context.Background(), tableOf(r, e, edges.KeyInt32, denseKeys, 2), BuildOptions{Weighted: true, BuildIn: true})
	if err != nil {
		t.Fatal(err)
	}
	g, rem := remoteOf(host, true)
	rem.fail = errors.New("device gone")
	if err := g.Materialize(); err == nil || !errors.Is(err, rem.fail) {
		t.Fatalf("Materialize: %v, want the fetch's error", err)
	}
	if _, err := g.Shards(false); err == nil {
		t.Fatal("Shards of a graph whose edges could not be fetched: no error")
	}
	if g.OnHost() || len(g.Out.Targets) != 0 || g.NumEdges() != host.NumEdges() {
		t.Fatalf("after a failed fetch: on host %v, %d targets, %d edges", g.OnHost(), len(g.Out.Targets), g.NumEdges())
	}
	if err := g.Materialize(); err == nil || rem.fetches != 1 {
		t.Fatalf("a second Materialize: %v after %d fetches; want the first error, one fetch", err, rem.fetches)
	}
}

func TestHostGraphIsOnHost(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	g, err := Build(context.Background(), tableOf(r, randomEdges(r, 20, 60), edges.KeyUint32, denseKeys, 1), BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !g.OnHost() || g.Materialize() != nil {
		t.Fatal("a host-built graph is not on the host")
	}
}
