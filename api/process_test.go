//go:build linux

package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestProcessFacts: the entity read carries an open local entity's
// process facts, read from /proc at the read; a list only when asked
// (?process=true); another host's, an ended one's and a reused pid's
// none or only why (ADR-0048).
func TestProcessFacts(t *testing.T) {
	host := probe.NewHost()
	e := newEnv(t, func(o *Options) {
		o.Processes = &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(probe.NewFacts(host), nil)}
	})
	sleep := testenv.Sleep(t)
	id, err := host.Identify(sleep.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	reg := func(entID, hostID string, startTicks uint64) {
		t.Helper()
		running := "running"
		ent := store.Entity{Type: "session", ID: entID, Lifecycle: &running, PID: id.PID, PIDStartTime: id.StartTime,
			PIDStartTicks: startTicks, HostID: hostID, BootID: id.BootID}
		if _, err := e.w.Register(context.Background(), transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	reg("mine", host.HostID(), id.StartTicks)
	reg("theirs", "another-host", id.StartTicks)
	reg("reused", host.HostID(), id.StartTicks+1)
	reg("ended", host.HostID(), id.StartTicks)
	e.move("session", "ended", "completed", "")

	read := func(entID string) wire.Entity {
		t.Helper()
		var got wire.Entity
		e.decode(e.do("GET", "/api/v1/entities/session/"+entID, ""), &got)
		return got
	}
	mine := read("mine")
	if p := mine.Process; p == nil || p.ProcessUsage == nil || p.PID != id.PID || p.Threads != 1 || p.RSSBytes == 0 || p.TreeMode != "seed" {
		t.Fatalf("an open local entity's process: %+v", p)
	}
	if p := read("theirs").Process; p != nil {
		t.Errorf("another host's entity has process facts: %+v", p)
	}
	if p := read("ended").Process; p != nil {
		t.Errorf("an ended entity has process facts: %+v", p)
	}
	if p := read("reused").Process; p == nil || p.ProcessUsage != nil || p.Unavailable != "pid reused" {
		t.Errorf("a reused pid's facts: %+v", p)
	}
	// The raw document: no usage fields beside "unavailable".
	if r := e.do("GET", "/api/v1/entities/session/reused", ""); strings.Contains(string(r.body), `"rss_bytes"`) {
		t.Errorf("a reused pid's document describes a process: %s", r.body)
	}

	list := func(q string) map[string]wire.Entity {
		t.Helper()
		var got wire.EntityList
		e.decode(e.do("GET", "/api/v1/entities?type=session"+q, ""), &got)
		out := map[string]wire.Entity{}
		for _, it := range got.Items {
			out[it.ID] = it
		}
		return out
	}
	for _, it := range list("") {
		if it.Process != nil {
			t.Errorf("a list not asking has process facts: %s %+v", it.ID, it.Process)
		}
	}
	wide := list("&process=true")
	if p := wide["mine"].Process; p == nil || p.ProcessUsage == nil {
		t.Errorf("a list asking: mine has %+v", p)
	}
	if p := wide["theirs"].Process; p != nil {
		t.Errorf("a list asking: theirs has %+v", p)
	}
	r := e.do("GET", "/api/v1/entities?process=maybe", "")
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), `process \"maybe\"`) {
		t.Errorf("?process=maybe: %d %s", r.status, r.body)
	}
}
