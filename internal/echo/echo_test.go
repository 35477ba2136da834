package echo

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"src", "src"},
		{"ключ", "ключ"},
		{"a\tb", `"a\tb"`},
		{"\xff", `"\xff"`},
		{strings.Repeat("c", Len), strings.Repeat("c", Len)},
		{strings.Repeat("c", 1<<20), `"` + strings.Repeat("c", Len) + `"...`},
		{strings.Repeat("é", 100), `"` + strings.Repeat("é", Len) + `"...`},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%.20q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"web", `"web"`},
		{"a\nb", `"a\nb"`},
		{strings.Repeat("c", Len), `"` + strings.Repeat("c", Len) + `"`},
		{strings.Repeat("c", 1<<20), `"` + strings.Repeat("c", Len) + `..."`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.20q) = %s, want %s", c.in, got, c.want)
		}
	}
}
