// Package bytesize writes byte counts for people.
package bytesize

import (
	"fmt"
	"strings"
)

// Format writes n as "512 B", "3 KiB", "12.3 GiB": one decimal, none
// where it would be 0.
func Format(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		if v < unit && v > -unit || u == "TiB" {
			return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + u
		}
	}
	return fmt.Sprintf("%d B", n)
}
