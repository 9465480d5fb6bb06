package page

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// TestHeartbeatShownIsJudged: the table's and the entity page's "Last
// heartbeat" is the heartbeat the judgement takes: a heartbeat file of
// this host's, read at the request (a real file, a real stat), when it is
// newer than the posted one; the posted one when that is newer, or when
// the entity is another host's. The API's entity read says the same.
func TestHeartbeatShownIsJudged(t *testing.T) {
	e := newEnvWith(t, "", &wire.Heartbeats{HostID: "here", Last: func(e *store.Entity, now time.Time) (time.Time, bool) {
		return probe.LastHeartbeat(probe.Owner{UID: os.Getuid(), Known: true}, e.HeartbeatFile, e.HeartbeatAt, now)
	}})
	ctx := context.Background()
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	touched := now.Add(-5 * time.Second)
	if err := os.Chtimes(hb, touched, touched); err != nil {
		t.Fatal(err)
	}
	running := "running"
	for _, ent := range []store.Entity{
		{Type: "session", ID: "here-1", HostID: "here", HeartbeatFile: hb, Lifecycle: &running},
		{Type: "session", ID: "there-1", HostID: "there", HeartbeatFile: hb, Lifecycle: &running},
	} {
		if _, err := e.w.Register(ctx, transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
		if err := e.st.RecordHeartbeat(ctx, ent.Type, ent.ID, now.Add(-4*time.Minute), ""); err != nil {
			t.Fatal(err)
		}
	}
	cell := func(body, id string) (source, text string) {
		t.Helper()
		m := regexp.MustCompile(`data-id="` + id + `"[\s\S]*?data-testid="heartbeat" data-source="(\w*)">([^<]*)<`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no heartbeat cell for %s:\n%s", id, body)
		}
		return m[1], m[2]
	}
	entityRead := func(id string) wire.Entity {
		t.Helper()
		_, body := e.get("/api/v1/entities/session/" + id)
		var out wire.Entity
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return out
	}

	body := e.page("/")
	if src, txt := cell(body, "here-1"); src != "file" || txt != "5s ago" {
		t.Errorf("this host's entity shows %q from %q, want 5s ago from its file", txt, src)
	}
	if src, txt := cell(body, "there-1"); src != "posted" || txt != "4m ago" {
		t.Errorf("another host's entity shows %q from %q, want the posted 4m ago", txt, src)
	}
	pg := e.page("/entities/session/here-1")
	if !strings.Contains(pg, `data-testid="heartbeat" data-source="file">5s ago <span class="muted">(heartbeat file)</span>`) {
		t.Errorf("the entity page does not show the file's heartbeat:\n%s", pg)
	}
	if got := entityRead("here-1"); got.Heartbeat == nil || got.Heartbeat.Source != state.HeartbeatSourceFile ||
		!got.Heartbeat.At.Equal(touched) || !got.HeartbeatAt.Equal(now.Add(-4*time.Minute)) {
		t.Errorf("the entity read's heartbeat is %+v (heartbeat_at %v), want the file's at %v and the posted one kept", got.Heartbeat, got.HeartbeatAt, touched)
	}

	// A posted heartbeat newer than the file is the one judged, and shown.
	if err := e.st.RecordHeartbeat(ctx, "session", "here-1", now.Add(-time.Second), ""); err != nil {
		t.Fatal(err)
	}
	if src, txt := cell(e.page("/"), "here-1"); src != "posted" || txt != "1s ago" {
		t.Errorf("after a newer post the entity shows %q from %q, want 1s ago, posted", txt, src)
	}
	if got := entityRead("here-1"); got.Heartbeat == nil || got.Heartbeat.Source != state.HeartbeatSourcePosted {
		t.Errorf("the entity read's heartbeat is %+v, want the posted one", got.Heartbeat)
	}
}

// TestClusterHeaderSpeaksForAll: a folded cluster's toggle gives the
// count, the reason's registered summary, the range of the items' onsets
// and their entities; no single item's message (its pid, its signal),
// which stays on that item's line.
func TestClusterHeaderSpeaksForAll(t *testing.T) {
	e := newEnv(t, "")
	signals := []string{"SIGTERM", "SIGKILL", "SIGKILL", "SIGKILL"}
	for i, sig := range signals {
		id := fmt.Sprintf("s-%d", i+1)
		e.register("session", id, "run "+id, "running")
		e.move("session", id, "failed", state.RunFailedSignal, fmt.Sprintf("pid %d was killed by %s", 23338+i, sig))
		e.clock.Advance(2 * time.Minute)
	}
	body := e.page("/")
	m := regexp.MustCompile(`data-testid="cluster-toggle"[^>]*>[^<]*<span[^>]*>▶</span> (\d+) × <span data-testid="cluster-header">([^<]*)</span>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no folded cluster with a header:\n%s", body)
	}
	header := html.UnescapeString(m[2])
	if title := attention.Title(state.RunFailedSignal); !strings.HasPrefix(header, title+" · ") {
		t.Errorf("header %q does not lead with the reason's registered summary %q", header, title)
	}
	if m[1] != "4" {
		t.Errorf("the toggle counts %s, want 4", m[1])
	}
	for _, part := range []string{"first 12:00:00Z, last 12:06:00Z", "session/s-4, session/s-3, session/s-2 +1"} {
		if !strings.Contains(header, part) {
			t.Errorf("header %q lacks %q", header, part)
		}
	}
	for _, bad := range []string{"pid", "killed by SIGKILL", "killed by SIGTERM"} {
		if strings.Contains(header, bad) {
			t.Errorf("header %q speaks for one item (%s)", header, bad)
		}
	}
	if strings.Count(body, "was killed by SIGKILL") < 3 || !strings.Contains(body, "pid 23338 was killed by SIGTERM") {
		t.Errorf("each item's own message belongs on its line")
	}
}

// TestQueueHeartbeatShownIsJudged: an attention item carries the
// heartbeat its entity is judged by, found at the read, in the API's
// queue (`heartbeat: {at, source}`) and on the page's item line: this
// host's heartbeat file (a real file, a real stat) when it is the later,
// the posted heartbeat of another host's entity, nothing for an entity
// with neither. A touch of the file after the items were derived shows at
// the next read: the cached items are not what carries it.
func TestQueueHeartbeatShownIsJudged(t *testing.T) {
	e := newEnvWith(t, "", &wire.Heartbeats{HostID: "here", Last: func(e *store.Entity, now time.Time) (time.Time, bool) {
		return probe.LastHeartbeat(probe.Owner{UID: os.Getuid(), Known: true}, e.HeartbeatFile, e.HeartbeatAt, now)
	}})
	ctx := context.Background()
	hb := filepath.Join(t.TempDir(), "s.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	touched := now.Add(-5 * time.Second)
	if err := os.Chtimes(hb, touched, touched); err != nil {
		t.Fatal(err)
	}
	posted := now.Add(-4 * time.Minute)
	running := "running"
	for _, ent := range []store.Entity{
		{Type: "session", ID: "here-1", HostID: "here", HeartbeatFile: hb, Lifecycle: &running},
		{Type: "session", ID: "there-1", HostID: "there", HeartbeatFile: hb, Lifecycle: &running},
		{Type: "session", ID: "none-1", HostID: "here", Lifecycle: &running},
	} {
		if _, err := e.w.Register(ctx, transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
		if ent.HeartbeatFile != "" {
			if err := e.st.RecordHeartbeat(ctx, ent.Type, ent.ID, posted, ""); err != nil {
				t.Fatal(err)
			}
		}
		e.observe(ent.Type, ent.ID, state.HealthStalled, state.RunHealthStalled)
	}
	queue := func() map[string]*state.JudgedHeartbeat {
		t.Helper()
		status, body := e.get("/api/attention")
		if status != 200 {
			t.Fatalf("GET /api/attention: %d %s", status, body)
		}
		var q struct {
			Items []struct {
				Entity    attention.Entity       `json:"entity"`
				Heartbeat *state.JudgedHeartbeat `json:"heartbeat"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(body), &q); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if n := strings.Count(body, `"heartbeat":`); n != 2 {
			t.Errorf("%d items carry a heartbeat, want 2 (none-1 has none, and leaves it out):\n%s", n, body)
		}
		out := map[string]*state.JudgedHeartbeat{}
		for _, it := range q.Items {
			out[it.Entity.ID] = it.Heartbeat
		}
		if len(out) != 3 {
			t.Fatalf("queue items %v, want the three stalled sessions", out)
		}
		return out
	}
	line := func(body, id string) string {
		t.Helper()
		m := regexp.MustCompile(`data-fingerprint="session:` + id + `:[^"]*">\s*<div class="item-text">(.*?)</div>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no queue item for %s:\n%s", id, body)
		}
		return m[1]
	}
	shown := func(body, id string) string {
		t.Helper()
		m := regexp.MustCompile(`data-testid="item-heartbeat">([^<]*)<`).FindStringSubmatch(line(body, id))
		if m == nil {
			return ""
		}
		return m[1]
	}

	got := queue()
	if h := got["here-1"]; h == nil || h.Source != state.HeartbeatSourceFile || !h.At.Equal(touched) {
		t.Errorf("this host's item shows %+v, want the file's at %v", h, touched)
	}
	if h := got["there-1"]; h == nil || h.Source != state.HeartbeatSourcePosted || !h.At.Equal(posted) {
		t.Errorf("another host's item shows %+v, want the posted one at %v", h, posted)
	}
	if h := got["none-1"]; h != nil {
		t.Errorf("an entity with no heartbeat shows %+v", h)
	}
	body := e.page("/")
	for id, want := range map[string]string{"here-1": "last heartbeat 5s ago (file)", "there-1": "last heartbeat 4m ago (posted)", "none-1": ""} {
		if s := shown(body, id); s != want {
			t.Errorf("the page's item of %s shows %q, want %q", id, s, want)
		}
	}

	// The file touched after the items were derived: the next read stats
	// it again, and nothing in the view changed.
	retouched := now.Add(-time.Second)
	if err := os.Chtimes(hb, retouched, retouched); err != nil {
		t.Fatal(err)
	}
	if h := queue()["here-1"]; h == nil || h.Source != state.HeartbeatSourceFile || !h.At.Equal(retouched) {
		t.Errorf("after a touch this host's item shows %+v, want the file's at %v", h, retouched)
	}
	if s := shown(e.page("/"), "here-1"); s != "last heartbeat 1s ago (file)" {
		t.Errorf("after a touch the page's item shows %q", s)
	}
}
