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

// The skip reasons --skip-invalid reports name the column as messages do:
// a long name cut (SkipBadWeight showed it whole).
func TestSkipReasonsShort(t *testing.T) {
	long := strings.Repeat("w", 1000)
	cut := `"` + strings.Repeat("w", echo.Len) + `..."`
	for _, reason := range []string{SkipNullKey(long), SkipNullWeight(long), SkipBadWeight(long)} {
		if !strings.HasSuffix(reason, " "+cut) {
			t.Errorf("reason %q does not end in the column's name cut short", reason)
		}
	}
}
