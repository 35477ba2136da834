//go:build !gpipe_nokernels

package kernels

import "embed"

// The fatbins, embedded: a gpipe binary needs nothing of CUDA but the
// driver.

//go:embed *.fatbin
var fatbins embed.FS

// embedsFatbins says the build embedded the fatbins.
const embedsFatbins = true
