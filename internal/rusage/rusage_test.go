package rusage

import "testing"

func TestPeakRSSCountsWhatWasTouched(t *testing.T) {
	before := PeakRSS()
	if before <= 0 {
		t.Fatalf("PeakRSS %d before anything: want the process's own resident set", before)
	}
	// Touch 64 MiB more than the process holds now: the peak must grow.
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	after := PeakRSS()
	if after < before+32<<20 {
		t.Errorf("PeakRSS %d after touching 64 MiB, %d before", after, before)
	}
	_ = b[len(b)-1]
}
