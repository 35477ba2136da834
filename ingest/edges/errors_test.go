package edges

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// TestValidUTF8 checks the one-pass test against utf8.Valid on each
// string, for strings cut from every split of a few byte sequences, placed
// after a prefix the offsets skip.
func TestValidUTF8(t *testing.T) {
	seqs := []string{"aé日😀", "\xc3\xa9\xc3\xa9", "ab\xffc", "\xe6\x97\xa5\xe6", "", "é\xed\xa0\x80", "plain ascii only"}
	for _, s := range seqs {
		data := []byte("\xff" + s) // the prefix is no string's
		n := int64(len(data))
		// Every way of cutting s into up to three strings.
		for i := int64(1); i <= n; i++ {
			for j := i; j <= n; j++ {
				want := utf8.Valid(data[1:i]) && utf8.Valid(data[i:j]) && utf8.Valid(data[j:])
				if got := ValidUTF8(data, []int64{1, i, j, n}); got != want {
					t.Fatalf("%q cut at %d, %d: %v, want %v", s, i, j, got, want)
				}
			}
		}
	}
}
