package edges

import (
	"strings"
	"testing"

	"github.com/gpipe/gpipe/internal/echo"
)

// Column lists in messages are short: long names cut, many names cut.
func TestListColumns(t *testing.T) {
	long := strings.Repeat("c", 1000)
	got := listColumns([]string{"src", long, "a\tb", "ключ"})
	want := `src, "` + strings.Repeat("c", echo.Len) + `"..., "a\tb", ключ`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	var many []string
	for i := 0; i < 1000; i++ {
		many = append(many, "c")
	}
	if got := listColumns(many); got != strings.Repeat("c, ", maxListed)+"... 1000 in all" {
		t.Errorf("got %s", got)
	}
}
