package e2e

// "One judgement, everywhere", observations 2 and 4, replayed against the
// built binary: the heartbeat the judgement used is the heartbeat shown
// (status from the database and through the daemon, the entity read, the
// page, the attention queue), and a cluster's header speaks for all its
// items.

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/pidwatch"
	"watchdog/state"
	"watchdog/wire"
)

// jvQuiet is a daemon whose jobs wait an hour and whose dead processes
// are not ended for an hour: what the tests see comes from the reads and
// from the daemon's events (pidfds), not from a sweep.
var jvQuiet = svConfig{Grace: "1h", Phantom: "1h", Enforce: "@every 1h", Reap: "@every 1h", Sweep: "@every 1h", Schedules: "@every 1h"}

// jvGet reads a path of the daemon.
func jvGet(t *testing.T, base, path string) string {
	t.Helper()
	resp, err := svHTTP.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, b)
	}
	return string(b)
}

// jvEntity is the daemon's entity read.
func jvEntity(t *testing.T, base, typ, id string) wire.Entity {
	t.Helper()
	var e wire.Entity
	if err := json.Unmarshal([]byte(jvGet(t, base, "/api/v1/entities/"+typ+"/"+id)), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// jvStatus runs `watchdog status` with args and returns the HEARTBEAT
// cell of the row of id.
func jvStatus(t *testing.T, id string, args ...string) string {
	t.Helper()
	r := wd(t, "", append([]string{"status"}, args...)...)
	if r.code != 0 {
		t.Fatalf("status %v: exit %d: %s", args, r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	head := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(lines[0]), -1)
	col := -1
	for i, h := range head {
		if h == "HEARTBEAT" {
			col = i
		}
	}
	for _, l := range lines[1:] {
		cells := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)
		if len(cells) == len(head) && cells[2] == id {
			return cells[col]
		}
	}
	t.Fatalf("status %v has no row of %s (or its columns do not parse):\n%s", args, id, r.stdout)
	return ""
}

// jvListed is the entity id of `status --json`.
func jvListed(t *testing.T, id string, args ...string) wire.Entity {
	t.Helper()
	r := wd(t, "", append([]string{"status", "--json"}, args...)...)
	var l wire.EntityList
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &l) != nil {
		t.Fatalf("status --json %v: exit %d: %s%s", args, r.code, r.stderr, r.stdout)
	}
	for _, e := range l.Items {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("status --json %v lists no %s", args, id)
	return wire.Entity{}
}

// seconds is an age of seconds as a table shows it.
var seconds = regexp.MustCompile(`^(\d+s ago|now)$`)

// Observation 2: an agent whose heartbeat file is touched all the time
// read "HEARTBEAT -" (or the age of an old posted heartbeat) in status and
// "Last heartbeat –" on its page, right above the evidence naming the
// file's fresh mtime. Now every read shows the heartbeat the judgement
// takes, with its source; the file is read at the read, never stored.
func TestJudgeViewHeartbeatShownIsJudged(t *testing.T) {
	dir, db, cfg := svSetup(t, jvQuiet)
	d := svStart(t, cfg, db)
	hb := filepath.Join(dir, "agent.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var toucher sync.WaitGroup
	toucher.Go(func() {
		for {
			now := time.Now()
			os.Chtimes(hb, now, now) //nolint:errcheck // a missed touch only ages the file
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	stopTouching := sync.OnceFunc(func() { close(stop); toucher.Wait() })
	t.Cleanup(stopTouching)
	p := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"obs2","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p.pid, hb))

	// The file's heartbeat, everywhere: status from the database and
	// through the daemon, both JSONs, the page's table and entity page.
	for _, args := range [][]string{{"--db", db}, {"--server", d.base}} {
		if cell := jvStatus(t, "obs2", args...); !seconds.MatchString(cell) {
			t.Errorf("status %v: HEARTBEAT %q, want an age of seconds", args, cell)
		}
		e := jvListed(t, "obs2", args...)
		if e.Heartbeat == nil || e.Heartbeat.Source != state.HeartbeatSourceFile || e.Heartbeat.At.IsZero() {
			t.Errorf("status --json %v: heartbeat %+v, want the file's", args, e.Heartbeat)
		}
	}
	e := jvEntity(t, d.base, "session", "obs2")
	if e.Heartbeat == nil || e.Heartbeat.Source != state.HeartbeatSourceFile {
		t.Fatalf("the entity read's heartbeat is %+v, want source file", e.Heartbeat)
	}
	if age := e.State.EvaluatedAt.Sub(e.Heartbeat.At.Time); age < 0 || age > time.Minute || !e.HeartbeatAt.IsZero() {
		t.Errorf("heartbeat at %v is %v before the read, heartbeat_at %v: want seconds, and no posted one", e.Heartbeat.At, age, e.HeartbeatAt)
	}
	fileCell := regexp.MustCompile(`data-testid="heartbeat" data-source="file">(\d+s ago|now)`)
	if pg := jvGet(t, d.base, "/entities/session/obs2"); !fileCell.MatchString(pg) {
		t.Errorf("the entity page does not show the file's heartbeat in seconds:\n%s", pg)
	}
	if pg := jvGet(t, d.base, "/"); !regexp.MustCompile(`data-id="obs2"[\s\S]*?` + fileCell.String()).MatchString(pg) {
		t.Errorf("the page's table does not show the file's heartbeat in seconds:\n%s", pg)
	}

	// A posted heartbeat newer than the file is the one judged, and shown.
	stopTouching()
	old := time.Now().Add(-2 * time.Second)
	if err := os.Chtimes(hb, old, old); err != nil {
		t.Fatal(err)
	}
	if r := wd(t, "", "heartbeat", "session/obs2", "--db", db); r.code != 0 {
		t.Fatalf("heartbeat: exit %d: %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"--db", db}, {"--server", d.base}} {
		if e := jvListed(t, "obs2", args...); e.Heartbeat == nil || e.Heartbeat.Source != state.HeartbeatSourcePosted || !e.Heartbeat.At.Equal(e.HeartbeatAt.Time) {
			t.Errorf("status --json %v: heartbeat %+v (heartbeat_at %v), want the posted one", args, e.Heartbeat, e.HeartbeatAt)
		}
		if cell := jvStatus(t, "obs2", args...); !seconds.MatchString(cell) {
			t.Errorf("status %v: HEARTBEAT %q, want an age of seconds", args, cell)
		}
	}
	if e := jvEntity(t, d.base, "session", "obs2"); e.Heartbeat == nil || e.Heartbeat.Source != state.HeartbeatSourcePosted {
		t.Errorf("the entity read's heartbeat is %+v, want the posted one", e.Heartbeat)
	}
	if pg := jvGet(t, d.base, "/entities/session/obs2"); !strings.Contains(pg, `data-testid="heartbeat" data-source="posted">`) {
		t.Errorf("the entity page does not show the posted heartbeat:\n%s", pg)
	}

	t.Run("the queue", jvQueueHeartbeat)
}

// jvQueueHeartbeat: the queue's items show the heartbeat their entity was
// judged by, as the entity read does. Under a daemon with short
// thresholds one session stalls on a posted heartbeat, another on an old
// heartbeat file; each item's heartbeat (source and time) is its entity
// read's, in /api/attention, `attention --json` from the database and
// through the daemon, on the item line of `attention` and on the page.
func jvQueueHeartbeat(t *testing.T) {
	d := truthStart(t, "")
	hb := testenv.AgedFile(t, t.TempDir(), "q-file.hb", "", time.Minute)
	p1, p2 := testenv.Sleep(t), testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"q-file","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, p1.Process.Pid, hb))
	d.register(t, fmt.Sprintf(`{"type":"session","id":"q-posted","lifecycle":"running","pid":%d}`, p2.Process.Pid))
	if r := wd(t, "", "heartbeat", "session/q-posted", "--db", d.db); r.code != 0 {
		t.Fatalf("heartbeat: exit %d: %s", r.code, r.stderr)
	}
	want := map[string]string{
		"session:q-file:run.health.stalled":   state.HeartbeatSourceFile,
		"session:q-posted:run.health.stalled": state.HeartbeatSourcePosted,
	}
	testenv.Eventually(t, "both stalls in the queue", truthWait, func() (bool, string) {
		q := d.queue(t, "")
		for fp := range want {
			if _, ok := item(q, fp); !ok {
				return false, fmt.Sprintf("%d items", len(q.Items))
			}
		}
		return true, ""
	})
	judged := map[string]*state.JudgedHeartbeat{}
	for _, id := range []string{"q-file", "q-posted"} {
		e := d.must(t, "session", id)
		if e.Heartbeat == nil {
			t.Fatalf("the entity read of %s has no heartbeat", id)
		}
		judged[id] = e.Heartbeat
	}
	if !judged["q-posted"].At.Equal(d.must(t, "session", "q-posted").HeartbeatAt.Time) {
		t.Errorf("the posted heartbeat %+v is not heartbeat_at", judged["q-posted"])
	}
	check := func(how string, q attention.Queue) {
		t.Helper()
		for fp, source := range want {
			it, ok := item(q, fp)
			if !ok {
				t.Errorf("%s: no item %s", how, fp)
				continue
			}
			if h, j := it.Heartbeat, judged[it.Entity.ID]; h == nil || h.Source != source || !h.At.Equal(j.At.Time) {
				t.Errorf("%s: %s shows heartbeat %+v, want the judged %+v (%s)", how, fp, h, j, source)
			}
		}
	}
	check("/api/attention", d.queue(t, ""))
	for _, args := range [][]string{{"--db", d.db}, {"--server", d.base}} {
		r := wd(t, "", append([]string{"attention", "--json"}, args...)...)
		var q attention.Queue
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &q) != nil {
			t.Fatalf("attention --json %v: exit %d: %s%s", args, r.code, r.stderr, r.stdout)
		}
		check(fmt.Sprintf("attention --json %v", args), q)

		r = wd(t, "", append([]string{"attention"}, args...)...)
		for fp, source := range want {
			line := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(fp) + `\s.*$`).FindString(r.stdout)
			if !regexp.MustCompile(` · last heartbeat (\d+[smh] ago|now) \(` + source + `\)$`).MatchString(line) {
				t.Errorf("attention %v: the line of %s %q does not end with its heartbeat (%s):\n%s", args, fp, line, source, r.stdout)
			}
		}
	}
	pg := jvGet(t, d.base, "/")
	for fp, source := range want {
		m := regexp.MustCompile(`data-fingerprint="` + regexp.QuoteMeta(fp) + `">\s*<div class="item-text">.*?data-testid="item-heartbeat">([^<]*)<`).FindStringSubmatch(pg)
		if m == nil || !regexp.MustCompile(`^last heartbeat (\d+[smh] ago|now) \(`+source+`\)$`).MatchString(m[1]) {
			t.Errorf("the page's item %s does not show its heartbeat (%s): %q", fp, source, m)
		}
	}
}

// Observation 4: a cluster's header read "3 × process died…; dead since
// 17:56:05Z: pid 23338 was killed by SIGTERM" while two of the three were
// SIGKILLs at other times, and named no entity. Now it gives the count,
// the reason's registered summary, the range of onsets and the entities;
// each item's pid and signal stay on its own line.
func TestJudgeViewClusterSpeaksForAll(t *testing.T) {
	_, db, cfg := svSetup(t, jvQuiet)
	d := svStart(t, cfg, db)
	ids := []string{"obs4-a", "obs4-b", "obs4-c"}
	sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL, syscall.SIGKILL}
	var procs []*svProc
	for _, id := range ids {
		p := svSleep(t)
		procs = append(procs, p)
		svRegister(t, db, fmt.Sprintf(`{"type":"session","id":%q,"lifecycle":"running","pid":%d}`, id, p.pid))
	}
	// Watched before they die, so the kernel's exit status is kept.
	testenv.Eventually(t, "every process watched by pidfd", svDeadline, func() (bool, string) {
		fds := pidfdsOf(t, d.cmd.Process.Pid)
		for _, p := range procs {
			if !fds[p.pid] {
				return false, fmt.Sprintf("pidfds %v", fds)
			}
		}
		return true, ""
	})
	const code = "run.health.process_dead"
	var onsets []time.Time
	for i, p := range procs {
		if err := p.cmd.Process.Signal(sigs[i]); err != nil {
			t.Fatal(err)
		}
		<-p.done
		var onset time.Time
		testenv.Eventually(t, ids[i]+" dead in the queue", svDeadline, func() (bool, string) {
			var q attention.Queue
			if err := json.Unmarshal([]byte(jvGet(t, d.base, "/api/attention?limit=500")), &q); err != nil {
				t.Fatal(err)
			}
			it, ok := item(q, "session:"+ids[i]+":"+code)
			onset = it.FirstSeenAt.Time
			if ok && pidwatch.ExitStatusSupported() {
				// The exit status comes with a second report once the
				// parent has reaped it (pidwatch.ExitWait): wait for the
				// line that names it, as an operator would see it.
				ok = strings.Contains(it.Reason.Summary, "killed by "+map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[sigs[i]])
			}
			return ok, fmt.Sprintf("%+v", q.Items)
		})
		onsets = append(onsets, onset)
		// The next dies in a later second, so the onsets read apart.
		testenv.Eventually(t, "a new second", svDeadline, func() (bool, string) {
			return time.Now().Truncate(time.Second).After(onset), ""
		})
	}
	first, last := onsets[0], onsets[len(onsets)-1]
	parts := []string{
		code + " · 3 items",
		"The recorded process is conclusively gone",
		"first " + first.UTC().Format("15:04:05Z"),
		"last " + last.UTC().Format("15:04:05Z"),
	}
	// A header shows an onset as its time of day when it is of the
	// reading's day, else whole (attention's clock): a test run across
	// midnight reads the whole stamp.
	whole := map[string]string{
		parts[2]: "first " + first.UTC().Format(state.StampLayout),
		parts[3]: "last " + last.UTC().Format(state.StampLayout),
	}
	checkHeader := func(where, header string) {
		t.Helper()
		for _, want := range append(parts[1:], ids...) {
			if !strings.Contains(header, want) && (whole[want] == "" || !strings.Contains(header, whole[want])) {
				t.Errorf("%s: the cluster's header %q lacks %q", where, header, want)
			}
		}
		for _, bad := range []string{"pid ", "SIGKILL", "SIGTERM", "dead since"} {
			if strings.Contains(header, bad) {
				t.Errorf("%s: the cluster's header %q speaks for one item (%q)", where, header, bad)
			}
		}
	}
	for _, args := range [][]string{{"--db", db}, {"--server", d.base}} {
		r := wd(t, "", append([]string{"attention"}, args...)...)
		if r.code != 0 {
			t.Fatalf("attention %v: exit %d: %s", args, r.code, r.stderr)
		}
		var header string
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "  "+code+" · ") {
				header = l
			}
		}
		if !strings.HasPrefix(header, "  "+parts[0]+" · ") {
			t.Fatalf("attention %v: no header of a cluster of 3:\n%s", args, r.stdout)
		}
		checkHeader(fmt.Sprintf("attention %v", args), header)
		if pidwatch.ExitStatusSupported() && (strings.Count(r.stdout, "killed by SIGKILL") != 2 || strings.Count(r.stdout, "killed by SIGTERM") != 1) {
			t.Errorf("attention %v: each item's own signal belongs on its line:\n%s", args, r.stdout)
		}
	}
	pg := jvGet(t, d.base, "/")
	m := regexp.MustCompile(`data-cluster-id="cluster_` + regexp.QuoteMeta(code) + `"[^>]*>\s*(?:<div[^>]*>\s*)?<button[^>]*>[^<]*<span[^>]*>▶</span> (\d+) × <span data-testid="cluster-header">([^<]*)</span>`).FindStringSubmatch(pg)
	if m == nil || m[1] != "3" {
		t.Fatalf("the page has no folded cluster of 3 with a header:\n%s", pg)
	}
	checkHeader("the page", html.UnescapeString(m[2]))
}
