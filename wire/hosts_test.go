package wire

import (
	"errors"
	"testing"
)

func TestResolveHost(t *testing.T) {
	names := map[string]string{
		"0f3a": "web-1.example.org",
		"77b2": "db-1",
		"a1c9": "vm",
		"b2d0": "vm",
	}
	tests := []struct {
		v, want string
		err     error
	}{
		{"", "", nil},
		{"0f3a", "0f3a", nil},               // an id
		{"web-1.example.org", "0f3a", nil},  // a full name
		{"web-1", "0f3a", nil},              // its short form
		{"DB-1", "77b2", nil},               // names are not case-sensitive
		{"unrecorded", "unrecorded", nil},   // an id no daemon named (exec's)
		{"vm", "", ErrAmbiguousHost},        // two hosts bear it
		{"example.org", "example.org", nil}, // not a name: taken as an id
	}
	for _, tt := range tests {
		got, err := ResolveHost(tt.v, names)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ResolveHost(%q) = %q, %v; want %q, %v", tt.v, got, err, tt.want, tt.err)
		}
	}
	if _, err := ResolveHost("vm", names); err == nil || err.Error() != `ambiguous host name "vm": 2 hosts bear it, give one of their ids: a1c9, b2d0` {
		t.Errorf("the ambiguous name's error %q does not list the ids", err)
	}
}
