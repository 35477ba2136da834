package gpuop

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpipe/gpipe/operators"
)

// abouts says in a few words what each strategy does, by name, for the
// command line's help (TestEveryStrategyHasAbout keeps it whole).
var abouts = map[string]string{
	"enterprise": "direction-optimizing BFS with frontier classes (Enterprise)",
	"bfs4k":      "BFS-4K: small frontiers in one block, for high-diameter graphs",
	"persist":    "the whole search in one launch over every SM, a grid barrier a level (road networks, meshes)",
	"vwc":        "virtual warp-centric (a frontier push; a pull for pagerank)",
	"gshards":    "CuSha's G-Shards",
	"cw":         "CuSha's Concatenated Windows",
	"kites":      "KiTES: a pull of the active vertices",
	"warpseg":    "Warp Segmentation: a pull of all vertices",
	"afforest":   "Afforest: sampled linking, then the rest (cc)",
}

// StrategiesHelp is the help's list of GPU strategies: each operator's, in
// auto's order on a large graph, then what each name means.
func StrategiesHelp() string {
	var b strings.Builder
	for _, op := range operators.Names() {
		if ss := Strategies(op); len(ss) > 0 {
			fmt.Fprintf(&b, "   %-9s %s\n", op, strings.Join(ss, ", "))
		}
		if ws := weightedStrategies(op); len(ws) > 0 {
			fmt.Fprintf(&b, "   %-9s --weighted: %s\n", "", strings.Join(ws, ", "))
		}
	}
	for _, s := range StrategyNames() {
		fmt.Fprintf(&b, "   %-11s %s\n", s+":", abouts[s])
	}
	return b.String()
}

// weightedStrategies are op's strategies that read --weighted, where some
// do not (then only these run a weighted job).
func weightedStrategies(op string) []string {
	t := tableOf(op)
	if t == nil {
		return nil
	}
	var ws []string
	for _, s := range t.strategies {
		if s.reads&optWeighted != 0 {
			ws = append(ws, s.name)
		}
	}
	if len(ws) == len(t.strategies) {
		return nil
	}
	return ws
}

// StrategyNames is every strategy's name, each once, in the order
// StrategiesHelp lists them.
func StrategyNames() []string {
	var names []string
	for _, op := range operators.Names() {
		for _, s := range Strategies(op) {
			if !slices.Contains(names, s) {
				names = append(names, s)
			}
		}
	}
	return names
}
