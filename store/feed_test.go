package store

import (
	"testing"
)

// TestHostsMinus: what a reader whose selection moved from o to h has not
// read, for each pair of kinds, checked host by host.
func TestHostsMinus(t *testing.T) {
	hosts := []string{"", "a", "b", "c", "d"}
	sets := []Hosts{AllHosts(), Only(), Only("a"), Only("", "b"), AllBut("a"), AllBut("b", "c"), AllBut("", "a", "d")}
	for _, h := range sets {
		for _, o := range sets {
			d := h.Minus(o)
			for _, x := range hosts {
				if want := h.Has(x) && !o.Has(x); d.Has(x) != want {
					t.Errorf("%+v minus %+v has %q: %v, want %v", h, o, x, d.Has(x), want)
				}
			}
		}
	}
}

// TestHostsEqual: the same hosts in another order are equal; a list and
// everything but it are not.
func TestHostsEqual(t *testing.T) {
	for _, tc := range []struct {
		h, o Hosts
		want bool
	}{
		{Only("a", "b"), Only("b", "a"), true},
		{AllBut("a"), AllBut("a", "a"), true},
		{Only("a"), AllBut("a"), false},
		{AllHosts(), AllBut(), true},
		{Only(), Only("a"), false},
	} {
		if got := tc.h.Equal(tc.o); got != tc.want {
			t.Errorf("%+v equal %+v: %v, want %v", tc.h, tc.o, got, tc.want)
		}
	}
}
