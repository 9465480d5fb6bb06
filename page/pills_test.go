package page

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

var pillRe = regexp.MustCompile(`(?s)<span class="pill" data-testid="pill" data-tone="([^"]*)" data-dimension="([^"]*)"[^>]*>(.*?)<span class="pill-text">([^<]*)</span></span>`)

// pillsIn lists the pills in html as "dimension/tone/text", checking that
// each draws its icon as inline SVG.
func pillsIn(html string) string {
	var out []string
	for _, m := range pillRe.FindAllStringSubmatch(html, -1) {
		icon := "no-svg"
		if strings.HasPrefix(m[3], `<svg class="pill-icon"`) && strings.HasSuffix(m[3], `</svg>`) {
			icon = ""
		}
		out = append(out, strings.TrimSpace(m[2]+"/"+m[1]+"/"+m[4]+" "+icon))
	}
	return strings.Join(out, " ")
}

// TestPillsAreTheCompoundState: each row's pills are state.StatePills'
// (the lifecycle in its own colour, a pill per problem), every icon an
// inline SVG and no glyph a font may lack.
func TestPillsAreTheCompoundState(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "stuck", "", "running")
	e.observe("session", "stuck", state.HealthStalled, state.RunHealthStalled)
	e.register("session", "orphan", "", "running")
	e.move("session", "orphan", "completed", "", "")
	e.observe("session", "orphan", state.HealthOrphaned, state.RunHealthOrphaned)
	e.register("session", "fine", "", "running")
	e.move("session", "fine", "completed", "", "")
	e.register("session", "late", "", "running")
	e.move("session", "late", "timed_out", state.RunTimedOutDeadline, "over 15m")
	e.register("session", "stopped", "", "running")
	e.move("session", "stopped", "cancelled", state.RunCancelledOperator, "by hand")
	e.register("session", "old", "", "")
	body := e.page("/")
	for id, want := range map[string]string{
		"stuck":   "lifecycle/info/Running health/danger/Stalled",
		"orphan":  "lifecycle/success/Completed health/danger/Orphaned",
		"fine":    "lifecycle/success/Completed",
		"late":    "lifecycle/warning/Timed out",
		"stopped": "lifecycle/neutral/Cancelled",
		"old":     "lifecycle/legacy/legacy",
	} {
		row := regexp.MustCompile(`(?s)<tr data-testid="entity" data-type="session" data-id="` + id + `">.*?</tr>`).FindString(body)
		if got := pillsIn(row); got != want {
			t.Errorf("%s's pills: %q, want %q\n%s", id, got, want, row)
		}
	}
	for _, glyph := range []string{"⧗", "✕", "✓", "●", "■"} {
		if strings.Contains(body, glyph) {
			t.Errorf("the page draws an icon as the glyph %s", glyph)
		}
	}
}

// TestHostShownByName: a host whose daemon recorded its hostname at its
// start is shown by it, in the table and on the entity page, with the
// machine id on hover; one without a name is shown by its id.
func TestHostShownByName(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	const named, bare = "4c4c4544003957108052b4c04f384b32", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	if err := e.st.MarkDaemonStart(ctx, named, "build-7", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for id, host := range map[string]string{"n": named, "b": bare} {
		lc := "running"
		if _, err := e.w.Register(ctx, transitions.Registration{Entity: store.Entity{Type: "session", ID: id, HostID: host, Lifecycle: &lc}, Actor: transitions.ActorOrchestrator}); err != nil {
			t.Fatal(err)
		}
	}
	body := e.page("/")
	if want := `<td data-label="Host" data-testid="host" title="` + named + `">build-7</td>`; !strings.Contains(body, want) {
		t.Errorf("the named host's cell: want %s\n%s", want, body)
	}
	if want := `<td data-label="Host" data-testid="host" title="` + bare + `">` + bare + `</td>`; !strings.Contains(body, want) {
		t.Errorf("the unnamed host's cell: want %s", want)
	}
	if want := `<option value="` + named + `" label="build-7">`; !strings.Contains(body, want) {
		t.Errorf("the host filter does not name the host: want %s", want)
	}
	if want := `<dd data-testid="host" title="` + named + `">build-7</dd>`; !strings.Contains(e.page("/entities/session/n"), want) {
		t.Errorf("the entity page's host: want %s", want)
	}
}

// TestEvidenceTimesRendered: a moment an evidence detail writes (a start
// time in Unix seconds) is shown as a date-time with its age in a <time>
// the script puts in the browser's zone; the raw number is not shown.
func TestEvidenceTimesRendered(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	e.register("session", "s", "", "running")
	start := e.clock.Now().Add(-90 * time.Minute)
	ev := state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: "pid 4242 alive (state S, start time 1795715690.15, ppid 1)",
		Times: []state.EvidenceTime{state.TimeOf("1795715690.15", start)}}
	cur, err := e.st.Get(ctx, "session", "s")
	if err != nil {
		t.Fatal(err)
	}
	now := e.clock.Now()
	if _, err := e.st.RecordObservation(ctx, "session", "s", store.Observation{Health: state.HealthIdle, Delivery: state.DeliveryUnknown,
		Reasons: []state.StateReason{state.Observed(state.RunHealthIdle, "no heartbeat lately", ev)}, HealthSince: now, SeenSeq: cur.LastSeq, At: now}); err != nil {
		t.Fatal(err)
	}
	body := e.page("/entities/session/s")
	want := `start time <time datetime="` + start.UTC().Format(time.RFC3339Nano) + `" data-testid="evidence-time" title="` + state.Stamp(start) + `">` + state.Stamp(start) + `</time> <span class="age">(1h ago)</span>, ppid 1)`
	if !strings.Contains(body, want) {
		t.Errorf("the evidence's start time: want %s\n%s", want, body)
	}
	if strings.Contains(body, "1795715690.15") {
		t.Errorf("the page shows the raw Unix seconds")
	}
}
