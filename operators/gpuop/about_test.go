package gpuop

import (
	"strings"
	"testing"
)

// TestEveryStrategyHasAbout: a strategy added to the registry gets its few
// words in abouts, so that the help never lists a name it cannot explain.
func TestEveryStrategyHasAbout(t *testing.T) {
	names := StrategyNames()
	if len(names) < 8 {
		t.Fatalf("strategies %v", names)
	}
	help := StrategiesHelp()
	for _, s := range names {
		if abouts[s] == "" {
			t.Errorf("strategy %q has no entry in abouts", s)
		}
		if !strings.Contains(help, "   "+s+":") {
			t.Errorf("the help does not explain %q:\n%s", s, help)
		}
	}
	if !strings.Contains(help, "   bfs       enterprise, bfs4k, vwc, persist\n") {
		t.Errorf("the help's bfs line:\n%s", help)
	}
}
