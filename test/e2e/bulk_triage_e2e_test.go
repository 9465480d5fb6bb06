package e2e

// End-to-end tests of bulk triage with the built binary: `watchdog snooze`
// and `dismiss` with several fingerprints or --cluster, through a daemon
// and on a database, all or none, each item logged once with its actor.

import (
	"context"
	"fmt"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"watchdog/attention"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// triageLog reads the triage log of the SQLite database at path.
func triageLog(t *testing.T, path string) []store.TriageEntry {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	log, err := st.TriageLog(context.Background(), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// oneBatch checks that log holds exactly fps (in any order), all of
// action by by (the command's user on the store, the caller's principal
// through a daemon), under one batch, and returns it.
func oneBatch(t *testing.T, log []store.TriageEntry, action, by string, fps ...string) string {
	t.Helper()
	var got []string
	batches := map[string]bool{}
	for _, e := range log {
		got = append(got, e.Fingerprint)
		batches[e.Batch] = true
		if e.Action != action || e.By != by {
			t.Errorf("triage entry %+v, want %s by %s", e, action, by)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(fps))
	if fmt.Sprint(got) != fmt.Sprint(want) || len(batches) != 1 {
		t.Errorf("triage log %v in %d batches, want %v in one", got, len(batches), want)
	}
	for b := range batches {
		return b
	}
	return ""
}

func TestBulkTriageThroughTheDaemon(t *testing.T) {
	d, env := triageFleet(t)
	work := t.TempDir()
	fpA := attention.Fingerprint("session", "a-fail", "run.failed.exit_nonzero")
	fpB := attention.Fingerprint("session", "b-fail", "run.failed.exit_nonzero")

	// Failure cases: one line, the exit code, nothing changed.
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"one unknown among two", []string{"dismiss", fpA, "session:a-run:run.failed.exit_nonzero"}, 1,
			`no attention item has fingerprint "session:a-run:run.failed.exit_nonzero"`},
		{"a cluster with no item", []string{"snooze", "--cluster", "cluster_run.health.stalled"}, 1, "has no item in the queue now"},
		{"a cluster of no code", []string{"snooze", "--cluster", "stalled"}, 2, "names no reason code"},
		{"both", []string{"dismiss", fpA, "--cluster", "run.failed.exit_nonzero"}, 2, "not both"},
		{"neither", []string{"dismiss"}, 2, "or --cluster KEY"},
	} {
		r := rmtRun(t, work, env, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.stderr) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: %+v, want exit %d and one line with %q", c.name, r, c.code, c.stderr)
		}
	}
	if q := d.queue(t, ""); q.Total != 2 {
		t.Fatalf("a refused triage changed the queue: %+v", q.Items)
	}
	if log := triageLog(t, d.db); len(log) != 0 {
		t.Fatalf("a refused triage was logged: %+v", log)
	}

	// The cluster, snoozed for 4h in one command: both items, one batch.
	r := rmtRun(t, work, env, "", "snooze", "--cluster", "cluster_run.failed.exit_nonzero", "--for", "4h")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "snoozed 2 items of cluster_run.failed.exit_nonzero until ") ||
		!strings.Contains(r.stdout, "\n  "+fpA+"\n") || !strings.Contains(r.stdout, "\n  "+fpB+"\n") {
		t.Fatalf("snooze --cluster: %+v", r)
	}
	if q := d.queue(t, ""); q.Total != 0 {
		t.Errorf("after the cluster snooze the queue holds %+v", q.Items)
	}
	q := d.queue(t, "include_dismissed=true")
	for _, fp := range []string{fpA, fpB} {
		it, ok := item(q, fp)
		if !ok || !it.Dismissed || it.SnoozedUntil.Sub(q.GeneratedAt.Time).Hours() < 3.9 || it.SnoozedUntil.Sub(q.GeneratedAt.Time).Hours() > 4 {
			t.Errorf("%s after snooze --for 4h: %+v", fp, it)
		}
	}
	oneBatch(t, triageLog(t, d.db), store.TriageSnooze, "token:admin", fpA, fpB)

	// Two fingerprints dismissed at once.
	r = rmtRun(t, work, env, "", "dismiss", fpA, fpB)
	if r.code != 0 || r.stdout != "dismissed 2 items until each one's status changes:\n  "+fpA+"\n  "+fpB+"\n" {
		t.Fatalf("dismiss two: %+v", r)
	}
	if log := triageLog(t, d.db); len(log) != 4 {
		t.Errorf("triage log after the dismissal: %+v", log)
	} else {
		oneBatch(t, log[2:], store.TriageDismiss, "token:admin", fpA, fpB)
	}
	assertEmptyDir(t, work)
}

func TestBulkTriageOnTheDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	var fps []string
	for _, id := range []string{"s-1", "s-2", "s-3"} {
		if r := wd(t, `{"type":"session","id":"`+id+`","lifecycle":"running"}`, "register", "--db", db, "--json", "-"); r.code != 0 {
			t.Fatalf("register: %+v", r)
		}
		if r := wd(t, "", "transition", "session/"+id, "failed", "--reason", "run.failed.signal", "--db", db); r.code != 0 {
			t.Fatalf("transition: %+v", r)
		}
		fps = append(fps, attention.Fingerprint("session", id, "run.failed.signal"))
	}
	r := wd(t, "", "snooze", fps[0], "session:s-9:run.failed.signal", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, `"session:s-9:run.failed.signal"`) || !strings.Contains(r.stderr, "nothing was snoozed or dismissed") {
		t.Errorf("one unknown: %+v", r)
	}
	if log := triageLog(t, db); len(log) != 0 {
		t.Fatalf("a refused snooze was logged: %+v", log)
	}
	r = wd(t, "", "snooze", fps[0], fps[1], "--for", "1w", "--db", db)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "snoozed 2 items until ") {
		t.Fatalf("snooze two: %+v", r)
	}
	oneBatch(t, triageLog(t, db), store.TriageSnooze, localPrincipal(t), fps[0], fps[1])
	// The cluster is what is left of it: the third.
	r = wd(t, "", "dismiss", "--cluster", "run.failed.signal", "--db", db)
	if r.code != 0 || r.stdout != "dismissed 1 item of run.failed.signal until each one's status changes:\n  "+fps[2]+"\n" {
		t.Fatalf("dismiss --cluster: %+v", r)
	}
	if r := wd(t, "", "attention", "--db", db); r.code != 0 || r.stdout != "attention queue is empty\n" {
		t.Errorf("attention after the triage: %+v", r)
	}
}

// localPrincipal is how the command line on the store names its user in
// the audit: "uid:0 (root)".
func localPrincipal(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return "uid:" + u.Uid + " (" + u.Username + ")"
}
