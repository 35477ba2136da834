package operators

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpipe/gpipe/internal/usererr"
)

// Parameter names, as in Params' JSON tags; the command line writes them
// with dashes.
const (
	ParamSource        = "source"
	ParamTolerance     = "tolerance"
	ParamMaxIterations = "max_iterations"
	ParamDamping       = "damping"
	ParamDelta         = "delta"
	ParamWeighted      = "weighted"
)

// The GPU strategies' parameters, which every operator with a GPU
// implementation (Spec.GPU) takes.
const (
	ParamStrategy      = "strategy"
	ParamVWarp         = "vwarp"
	ParamDeferOutliers = "defer_outliers"
	ParamDynamic       = "dynamic"
	ParamChunkSize     = "chunk_size"
	ParamVertexGroup   = "vertex_group"
)

// GPUParams lists the GPU strategies' parameters.
func GPUParams() []string {
	return []string{ParamStrategy, ParamVWarp, ParamDeferOutliers, ParamDynamic, ParamChunkSize, ParamVertexGroup}
}

// zeroMeansDefault are the parameters where Params' zero stands for the
// default but 0 itself is not a valid value: a caller who gives 0 means 0.
var zeroMeansDefault = map[string]func(Params) bool{
	ParamTolerance:     func(p Params) bool { return p.Tolerance == 0 },
	ParamMaxIterations: func(p Params) bool { return p.MaxIterations == 0 },
	ParamDamping:       func(p Params) bool { return p.Damping == 0 },
}

// ParamNames lists every operator parameter.
func ParamNames() []string {
	return append([]string{ParamSource, ParamTolerance, ParamMaxIterations, ParamDamping, ParamDelta, ParamWeighted}, GPUParams()...)
}

// Takes lists the parameters op takes.
func Takes(op Operator) []string {
	names := slices.Clone(op.Spec().Params)
	if op.Spec().GPU {
		names = append(names, GPUParams()...)
	}
	return names
}

// CheckSet checks the parameters a caller gave explicitly (set, by name):
// each must be one that op takes, so that a flag meant for another operator
// is not silently ignored, and none may be a 0 that Prepare would replace by
// the default. name writes a parameter as the caller knows it ("--max-
// iterations" on the command line, "max_iterations" in a Flight ticket).
func CheckSet(op Operator, p Params, set []string, name func(string) string) error {
	takes := Takes(op)
	for _, s := range set {
		if !slices.Contains(takes, s) {
			list := "no parameters"
			if len(takes) > 0 {
				named := make([]string, len(takes))
				for i, t := range takes {
					named[i] = name(t)
				}
				list = strings.Join(named, ", ")
			}
			return usererr.New(usererr.Usage, fmt.Sprintf("%s does not apply to operator %s (it takes %s)", name(s), op.Spec().Name, list),
				"leave it out")
		}
		if isZero, ok := zeroMeansDefault[s]; ok && isZero(p) {
			return usererr.New(usererr.Usage, fmt.Sprintf("operator %s: %s 0 is not valid", op.Spec().Name, name(s)),
				"leave it out for the default, or give a positive value")
		}
	}
	return nil
}
