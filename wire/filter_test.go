package wire

import (
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestEntityFilterKeeps: the one selection rule of every list (the API's,
// the page's, a database read by status): type, host, and severity, which
// a legacy entity never passes.
func TestEntityFilterKeeps(t *testing.T) {
	running := "running"
	open := store.Entity{Type: "session", ID: "s-1", HostID: "h1", Lifecycle: &running, Health: state.HealthProcessDead}
	legacy := store.Entity{Type: "session", ID: "s-2", HostID: "h1"}
	at := time.Unix(1_800_000_000, 0)
	openNS, legacyNS := transitions.Normalize(open, at), transitions.Normalize(legacy, at)
	other := state.SeverityNeutral
	if openNS.Severity == other {
		other = state.SeverityCritical
	}
	for _, c := range []struct {
		name string
		f    EntityFilter
		e    *store.Entity
		ns   state.NormalizedState
		want bool
	}{
		{"no filter", EntityFilter{}, &open, openNS, true},
		{"no filter, legacy", EntityFilter{}, &legacy, legacyNS, true},
		{"its type", EntityFilter{Type: "session"}, &open, openNS, true},
		{"another type", EntityFilter{Type: "workflow"}, &open, openNS, false},
		{"its host", EntityFilter{Host: "h1"}, &open, openNS, true},
		{"another host", EntityFilter{Host: "h2"}, &open, openNS, false},
		{"its severity", EntityFilter{Severities: []state.Severity{openNS.Severity}}, &open, openNS, true},
		{"another severity", EntityFilter{Severities: []state.Severity{other}}, &open, openNS, false},
		{"legacy under a severity", EntityFilter{Severities: state.Severities}, &legacy, legacyNS, false},
	} {
		if got := c.f.Keeps(c.e, c.ns); got != c.want {
			t.Errorf("%s: Keeps = %v, want %v", c.name, got, c.want)
		}
	}
}
