package rusage

import "testing"

func TestPeakRSSCountsWhatWasTouched(t *testing.T) {
	if PeakRSS() <= 0 {
		t.Fatalf("PeakRSS %d: want the process's own resident set", PeakRSS())
	}
	// Touch 256 MiB: the peak is at least most of it.
	b := make([]byte, 256<<20)
	for i := range b {
		b[i] = 1
	}
	if after := PeakRSS(); after < 200<<20 {
		t.Errorf("PeakRSS %d after touching 256 MiB", after)
	}
	_ = b[len(b)-1]
}
