package gpipe_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe"
)

// RunJob's report notes an operator that uses weights run on a table
// without a weight column, in the library's words; LoadOptions.Unweighted
// says that is meant.
func TestRunJobMissingWeightNote(t *testing.T) {
	in := filepath.Join(t.TempDir(), "e.csv")
	if err := os.WriteFile(in, []byte("src,dst\n1,2\n2,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, unweighted := range []bool{false, true} {
		rep, err := gpipe.RunJob(context.Background(), gpipe.Job{Input: in, Op: gpipe.SSSP, Params: gpipe.Params{Source: "1"},
			Load: gpipe.LoadOptions{Backend: "cpu", Unweighted: unweighted}})
		if err != nil {
			t.Fatal(err)
		}
		want := `sssp used weight 1 for every edge, as the input has no weight column "weight": its distances count edges; name the weight column with LoadOptions.Weight, or set LoadOptions.Unweighted to say weight 1 is meant`
		if unweighted && rep.Notes != nil || !unweighted && (len(rep.Notes) != 1 || rep.Notes[0] != want) {
			t.Errorf("unweighted %v: notes %q", unweighted, rep.Notes)
		}
		rep.Release()
	}
}
