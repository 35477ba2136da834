package vprog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/internal/usererr"
)

// FuzzParse checks that no text makes Parse panic, and that every text it
// refuses is an Input error naming the program. Its seeds are the
// examples and the bad programs of the tests; go test runs them alone
// (go test -fuzz FuzzParse ./operators/vprog explores further).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../examples/programs/*.vp")
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	for _, s := range []string{bfsLike, "", "program", "vertex x", "compute {", "const A = (((1", "vertex x uint32 = 0 output null", `"`, "0x", "1e", "a.b.c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse("fuzz.vp", text)
		if err != nil {
			var ue *usererr.Error
			if !errors.As(err, &ue) || ue.Kind != usererr.Input || ue.File != "fuzz.vp" {
				t.Fatalf("%q: %v is not an input error of fuzz.vp", text, err)
			}
			return
		}
		// A program that checks compiles for the CPU.
		c := &compiler{prog: p, env: &env{}}
		c.block(p.InitCompute)
		c.block(p.Compute)
		c.block(p.Update)
		// and for the GPU.
		if _, err := p.GeneratePTX(8); err != nil {
			t.Fatal(err)
		}
	})
}
