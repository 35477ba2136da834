package gpuop

import "testing"

// TestSwitchesDirection: Enterprise goes bottom-up when more than 30% of
// the hubs are in the next frontier, and top-down again when a bottom-up
// level finds fewer than n/24 vertices while more than n/24 stay unvisited.
func TestSwitchesDirection(t *testing.T) {
	const n = 2400 // n/24 = 100
	for _, c := range []struct {
		topDown        bool
		hubs, hubTotal int64
		found, unvisit int64
		want           bool
	}{
		{topDown: true, hubs: 31, hubTotal: 100, want: true},
		{topDown: true, hubs: 30, hubTotal: 100, want: false},
		{topDown: true, hubs: 5, hubTotal: 0, want: false},
		{topDown: false, found: 99, unvisit: 101, want: true},
		{topDown: false, found: 100, unvisit: 101, want: false},
		{topDown: false, found: 99, unvisit: 100, want: false},
	} {
		st := EntStats{Hubs: uint32(c.hubs), Found: uint32(c.found)}
		st.Count[0], st.Count[2] = uint32(c.unvisit-1), 1
		if got := SwitchesDirection(c.topDown, st, c.hubTotal, n); got != c.want {
			t.Errorf("%+v: switches %v, want %v", c, got, c.want)
		}
	}
	var d LevelDirections
	for _, td := range []bool{true, true, false, false, false, true} {
		d.Note(td)
	}
	if got := d.String(); got != "3 top-down, 3 bottom-up levels" {
		t.Errorf("directions %q", got)
	}
}
