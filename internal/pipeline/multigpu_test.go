package pipeline

import (
	"strings"
	"testing"
)

func TestChosenTransport(t *testing.T) {
	for v, want := range map[string]string{"": "", "nccl": "nccl", "peer": "peer"} {
		t.Setenv(transportEnv, v)
		got, err := chosenTransport()
		if err != nil || got != want {
			t.Errorf("%s=%q: %q, %v; want %q", transportEnv, v, got, err, want)
		}
	}
	t.Setenv(transportEnv, "nvlink")
	_, err := chosenTransport()
	if err == nil || !strings.Contains(err.Error(), `GPIPE_TRANSPORT="nvlink"`) || !strings.Contains(err.Error(), "nccl or peer") {
		t.Errorf("GPIPE_TRANSPORT=nvlink: %v, want an error naming the variable and the values", err)
	}
}
