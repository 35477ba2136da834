package main

import (
	"strings"
	"testing"

	"github.com/gpipe/gpipe/gpu"
)

func TestPeerMatrix(t *testing.T) {
	var b strings.Builder
	ps := []peer{
		{From: 0, To: 1, PeerLink: gpu.PeerLink{Access: true, Atomics: true, PerformanceRank: 0}},
		{From: 1, To: 0, PeerLink: gpu.PeerLink{Access: true, PerformanceRank: 1}},
		{From: 0, To: 2, Error: "cuDeviceGetP2PAttribute: CUDA_ERROR_INVALID_DEVICE"},
		{From: 2, To: 0},
		// 1 -> 2 and 2 -> 1 are missing.
	}
	if err := writePeerMatrix(&b, []int{0, 1, 2}, ps); err != nil {
		t.Fatal(err)
	}
	want := `
peer access from row to column (direct access, native atomics, the driver's performance rank):
from\to  0            1                     2
0        -            yes, atomics, rank 0  ? (cuDeviceGetP2PAttribute: CUDA_ERROR_INVALID_DEVICE)
1        yes, rank 1  -                     ?
2        no           ?                     -
`
	if got := b.String(); got != want {
		t.Errorf("matrix:\n%s\nwant:\n%s", got, want)
	}
}
