package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB",
		5 << 20: "5 MiB", 12<<30 + 300<<20: "12.3 GiB", 3 << 40: "3 TiB", 5000 << 40: "5000 TiB", -2048: "-2 KiB", 1<<20 - 1: "1024 KiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
