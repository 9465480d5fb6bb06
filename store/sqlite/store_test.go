package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func strp(s string) *string { return &s }

func TestOpenAppliesPragmasAndMigrations(t *testing.T) {
	s, path := openTest(t)
	db := s.db
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode %q %v", mode, err)
	}
	var fk, timeout, sync, cache int
	db.QueryRow("PRAGMA foreign_keys").Scan(&fk)
	db.QueryRow("PRAGMA busy_timeout").Scan(&timeout)
	db.QueryRow("PRAGMA synchronous").Scan(&sync)
	db.QueryRow("PRAGMA cache_size").Scan(&cache)
	if fk != 1 || timeout != BusyTimeoutMS || sync != 2 || cache != -CacheKiB {
		t.Errorf("foreign_keys=%d busy_timeout=%d synchronous=%d cache_size=%d", fk, timeout, sync, cache)
	}
	var version int
	db.QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&version)
	if version != SchemaVersion() || version < 1 {
		t.Errorf("schema version %d, want %d", version, SchemaVersion())
	}
	// Reopening applies nothing twice.
	s2, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var rows int
	s2.db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&rows)
	if rows != SchemaVersion() {
		t.Errorf("%d migration rows after reopen", rows)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	s, path := openTest(t)
	if _, err := s.db.Exec("INSERT INTO schema_migrations (version, name) VALUES (999, '999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "newer than this watchdog") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), ""); err == nil {
		t.Error("empty path accepted")
	}
	dir := t.TempDir()
	if _, err := Open(context.Background(), filepath.Join(dir, "no", "such", "dir", "w.db")); err == nil || !strings.Contains(err.Error(), "open store") {
		t.Errorf("missing directory: %v", err)
	}
}

func TestDSN(t *testing.T) {
	got := DSN("/var/lib/watchdog/w.db")
	for _, want := range []string{"file:/var/lib/watchdog/w.db?", "_txlock=immediate", "journal_mode%28WAL%29", "busy_timeout%2810000%29"} {
		if !strings.Contains(got, want) {
			t.Errorf("DSN %q lacks %q", got, want)
		}
	}
	if got := DSN("file:w.db?mode=rwc"); !strings.HasPrefix(got, "file:w.db?") || !strings.Contains(got, "mode=rwc") {
		t.Errorf("file URI DSN %q", got)
	}
}

// TestLifecycleWrittenOnlyByWritePath fails if any code outside the
// store's transition function updates the lifecycle column.
func TestLifecycleWrittenOnlyByWritePath(t *testing.T) {
	root := filepath.Join("..", "..")
	update := regexp.MustCompile(`(?is)UPDATE\s+entities\s+SET\s[^;` + "`" + `"]*?\blifecycle\s*=`)
	// The write path of each backend: SQLite's ApplyTransition, and
	// PostgreSQL's watchdog_apply_transition, which only its
	// ApplyTransition calls (ADR-0053).
	pgWritePath := filepath.Join("store", "postgres", "migrations", "0004_feed_by_transaction.sql")
	// Migration 0006 replaces the function (its audit row's host).
	pgWritePath2 := filepath.Join("store", "postgres", "migrations", "0006_audit_by_host.sql")
	// Migration 0008 adds the one that writes the derived columns too.
	pgWritePath3 := filepath.Join("store", "postgres", "migrations", "0008_transition_with_columns.sql")
	// Migration 0009 adds the one that records the principal too.
	pgWritePath4 := filepath.Join("store", "postgres", "migrations", "0009_principals.sql")
	allowed := map[string]int{filepath.Join("store", "sqlite", "transition.go"): 1, pgWritePath: 1, pgWritePath2: 1, pgWritePath3: 1, pgWritePath4: 1}
	seen := map[string]int{}
	scanned := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_test.go") || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sql")) {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		scanned++
		rel, _ := filepath.Rel(root, path)
		if n := len(update.FindAllIndex(body, -1)); n > 0 {
			seen[rel] += n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 10 {
		t.Fatalf("scanned only %d files", scanned)
	}
	for f, n := range seen {
		if allowed[f] != n {
			t.Errorf("%s updates the lifecycle column %d time(s); only the write path (store/sqlite/transition.go, %s) may", f, n, pgWritePath)
		}
	}
	if seen[filepath.Join("store", "sqlite", "transition.go")] != 1 || seen[pgWritePath] != 1 {
		t.Errorf("the scan did not find the write path's own UPDATE: the pattern is broken")
	}
}

// TestLifecycleTriggerRefusesUnauditedChange: even a direct SQL UPDATE of
// the lifecycle column is refused by the database without its audit row.
func TestLifecycleTriggerRefusesUnauditedChange(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", Lifecycle: strp("running")}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	_, err := s.db.Exec("UPDATE entities SET lifecycle = 'completed' WHERE id = 's1'")
	if err == nil || !strings.Contains(err.Error(), "without its audit row") {
		t.Fatalf("unaudited lifecycle update: %v", err)
	}
	// Reusing an old audit row is refused too.
	_, err = s.db.Exec("UPDATE entities SET lifecycle = 'completed', last_seq = last_seq WHERE id = 's1'")
	if err == nil {
		t.Fatal("update pointing at the old audit row accepted")
	}
	if _, err := s.db.Exec("DELETE FROM transitions"); err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Errorf("delete from transitions: %v", err)
	}
	if _, err := s.db.Exec("UPDATE transitions SET to_lifecycle = 'x'"); err == nil {
		t.Error("update of transitions accepted")
	}
	e, _ := s.Get(ctx, "session", "s1")
	if e.LifecycleOr("") != "running" {
		t.Errorf("lifecycle changed to %s", e.LifecycleOr(""))
	}
}

func TestRecordObservationWritesOnlyOnChange(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", Lifecycle: strp("running")}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	e, _ := s.Get(ctx, "session", "s1")
	obs := store.Observation{Health: state.HealthProcessDead, Delivery: state.DeliveryNotExpected, HealthSince: unixAt(5), DeadSince: unixAt(5), SeenSeq: e.LastSeq, At: unixAt(5),
		Reasons: []state.StateReason{state.Observed(state.RunHealthProcessDead, "pid 4242 not running")}}
	wrote, err := s.RecordObservation(ctx, "session", "s1", obs)
	if err != nil || !wrote {
		t.Fatalf("first observation: wrote=%v err=%v", wrote, err)
	}
	var changes int
	s.db.QueryRow("SELECT total_changes()").Scan(&changes)
	obs.At = unixAt(6) // same findings, later sweep
	wrote, err = s.RecordObservation(ctx, "session", "s1", obs)
	if err != nil || wrote {
		t.Fatalf("unchanged observation wrote=%v err=%v", wrote, err)
	}
	e, _ = s.Get(ctx, "session", "s1")
	if !e.UpdatedAt.Equal(unixAt(5)) || e.Health != state.HealthProcessDead || !e.DeadSince.Equal(unixAt(5)) || len(e.Reasons) != 1 {
		t.Errorf("stored %+v", e)
	}
	// A stale sequence (a transition landed since the probe read) writes nothing.
	obs.Health, obs.SeenSeq = state.HealthRunning, e.LastSeq-1
	if wrote, _ := s.RecordObservation(ctx, "session", "s1", obs); wrote {
		t.Error("observation against a stale lifecycle was written")
	}
}

func TestHeartbeatAndNotFound(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", Lifecycle: strp("running")}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHeartbeat(ctx, "session", "s1", unixAt(9), "step 3 of 7"); err != nil {
		t.Fatal(err)
	}
	e, _ := s.Get(ctx, "session", "s1")
	if !e.HeartbeatAt.Equal(unixAt(9)) || e.HeartbeatProgress != "step 3 of 7" {
		t.Errorf("heartbeat %v %q", e.HeartbeatAt, e.HeartbeatProgress)
	}
	if err := s.RecordHeartbeat(ctx, "session", "nope", unixAt(9), ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("heartbeat for unknown entity: %v", err)
	}
	if _, err := s.Get(ctx, "session", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
}

func TestListFilters(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	reg := func(typ, id string, lifecycle *string, host string) {
		t.Helper()
		if _, err := s.Register(ctx, store.Entity{Type: typ, ID: id, Lifecycle: lifecycle, HostID: host}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	reg("session", "a", strp("running"), "h1")
	reg("session", "b", strp("running"), "h2")
	reg("play", "p", strp("queued"), "h1")
	reg("session", "legacy", nil, "h1")
	// A terminal one, ended at 1.
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "done", Lifecycle: strp("completed"), Terminal: true, EndedAt: unixAt(1), HostID: "h1"}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	// Two plays of show sh1 on two hosts, one of show sh2.
	for _, c := range []struct{ id, show, host string }{{"c1", "sh1", "h1"}, {"c2", "sh1", "h2"}, {"c3", "sh2", "h1"}} {
		if _, err := s.Register(ctx, store.Entity{Type: "play", ID: c.id, Lifecycle: strp("running"), HostID: c.host, ParentType: "show", ParentID: c.show}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	// Session a of h1 was seen dead.
	a, err := s.Get(ctx, "session", "a")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RecordObservation(ctx, "session", "a", store.Observation{Health: "process_dead", Delivery: "not_expected", DeadSince: unixAt(2), HealthSince: unixAt(2), SeenSeq: a.LastSeq, At: unixAt(2)}); err != nil || !ok {
		t.Fatalf("record the death: %v, %v", ok, err)
	}
	count := func(f store.Filter) int {
		l, err := s.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	tests := []struct {
		f    store.Filter
		want int
	}{
		{store.Filter{}, 8},
		{store.Filter{Type: "session"}, 4},
		{store.Filter{HostID: "h1"}, 6},
		{store.Filter{HostID: "h1", OpenOnly: true}, 4},
		{store.Filter{HostID: "h1", OpenOnly: true, EndedSince: unixAt(1)}, 5},
		{store.Filter{HostID: "h1", OpenOnly: true, EndedSince: unixAt(2)}, 4},
		{store.Filter{Type: "play", ParentType: "show", ParentID: "sh1"}, 2},
		{store.Filter{Type: "play", ParentType: "show", ParentID: "sh2"}, 1},
		{store.Filter{Type: "play", ParentType: "team", ParentID: "sh1"}, 0},
		{store.Filter{HostID: "h1", OpenOnly: true, DeadOnly: true}, 1},
		{store.Filter{HostID: "h2", OpenOnly: true, DeadOnly: true}, 0},
	}
	for _, tt := range tests {
		if got := count(tt.f); got != tt.want {
			t.Errorf("List(%+v) = %d, want %d", tt.f, got, tt.want)
		}
	}
}

// TestReRegisterKeepsWhatItLeavesOut: a re-registration updates the fields
// it sends and keeps the others (a rename must not cost the entity its pid
// and so its liveness check); an explicit empty list clears one; a new pid
// brings its own identity, never the old pid's start time.
func TestReRegisterKeepsWhatItLeavesOut(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	full := store.Entity{Type: "play", ID: "p", Lifecycle: strp("running"), Label: "first", HostID: "h1", BootID: "b1",
		PID: 4242, PIDStartTime: unixAt(1000.5), PIDStartTicks: 777, SupervisorPID: 4200, HeartbeatFile: "/run/p.hb",
		Timeout: 900 * time.Second, ArtifactsRoot: "/srv/p", Artifacts: []state.ArtifactSpec{{Path: "out.md", Required: true, Kind: state.ArtifactFile}},
		LockFiles: []string{"/srv/p/.lock"}, ParentType: "show", ParentID: "sh", DependsOn: []string{"p0"},
		Metadata: []byte(`{"k":1}`)}
	if _, err := s.Register(ctx, full, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	get := func() store.Entity {
		t.Helper()
		e, err := s.Get(ctx, "play", "p")
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// A rename: everything else stays.
	if _, err := s.Register(ctx, store.Entity{Type: "play", ID: "p", Label: "second"}, "orchestrator", unixAt(2)); err != nil {
		t.Fatal(err)
	}
	e := get()
	if e.Label != "second" || e.PID != 4242 || !e.PIDStartTime.Equal(unixAt(1000.5)) || e.PIDStartTicks != 777 || e.BootID != "b1" || e.HostID != "h1" ||
		e.SupervisorPID != 4200 || e.HeartbeatFile != "/run/p.hb" || e.Timeout != 900*time.Second || e.ArtifactsRoot != "/srv/p" ||
		len(e.Artifacts) != 1 || len(e.LockFiles) != 1 || e.ParentID != "sh" || len(e.DependsOn) != 1 || string(e.Metadata) != `{"k":1}` ||
		e.LifecycleOr("") != "running" {
		t.Errorf("a rename changed other fields: %+v", e)
	}
	// A new pid without a start time: the old pid's identity does not stay.
	if _, err := s.Register(ctx, store.Entity{Type: "play", ID: "p", PID: 5151}, "orchestrator", unixAt(3)); err != nil {
		t.Fatal(err)
	}
	if e := get(); e.PID != 5151 || !e.PIDStartTime.IsZero() || e.PIDStartTicks != 0 || e.BootID != "" {
		t.Errorf("new pid kept the old identity: pid %d start %v ticks %d boot %q", e.PID, e.PIDStartTime, e.PIDStartTicks, e.BootID)
	}
	// Explicit empty lists clear.
	if _, err := s.Register(ctx, store.Entity{Type: "play", ID: "p", DependsOn: []string{}, Artifacts: []state.ArtifactSpec{}, LockFiles: []string{}}, "orchestrator", unixAt(4)); err != nil {
		t.Fatal(err)
	}
	if e := get(); len(e.DependsOn) != 0 || len(e.Artifacts) != 0 || len(e.LockFiles) != 0 {
		t.Errorf("explicit empty lists did not clear: %+v %+v %+v", e.DependsOn, e.Artifacts, e.LockFiles)
	}
}

// TestListSharesOnlyIdenticalContracts: List decodes each distinct
// artifact contract once; every entity still gets its own contract.
func TestListSharesOnlyIdenticalContracts(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	spec := func(paths ...string) []state.ArtifactSpec {
		var out []state.ArtifactSpec
		for _, p := range paths {
			out = append(out, state.ArtifactSpec{Path: p, Required: true, Kind: state.ArtifactFile})
		}
		return out
	}
	want := map[string][]state.ArtifactSpec{
		"a": spec("review.md"), "b": spec("review.md"), "c": spec("out.json", "log.txt"), "d": nil,
	}
	for id, specs := range want {
		if _, err := s.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: strp("running"), ArtifactsRoot: "/r/" + id, Artifacts: specs}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, store.Filter{Type: "session"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if fmt.Sprint(e.Artifacts) != fmt.Sprint(want[e.ID]) {
			t.Errorf("%s: artifacts %v, want %v", e.ID, e.Artifacts, want[e.ID])
		}
	}
}

// TestDaemonPresence: MarkDaemon upserts and never moves a host back in
// time; DaemonHosts lists the hosts seen since a moment.
func TestDaemonPresence(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, m := range []struct {
		host string
		at   float64
	}{{"a", 100}, {"b", 50}, {"a", 90}} {
		if err := s.MarkDaemon(ctx, m.host, unixAt(m.at)); err != nil {
			t.Fatal(err)
		}
	}
	for since, want := range map[float64]string{95: "map[a:true]", 40: "map[a:true b:true]", 101: "map[]"} {
		got, err := s.DaemonHosts(ctx, unixAt(since))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != want {
			t.Errorf("seen since %v: %v, want %s (a's later mark at 90 must not replace its 100)", since, got, want)
		}
	}
}

// TestListAlsoRemoteLive: a sweep's list is this host's entities plus the
// open ones of other hosts that have a pid or a posted heartbeat; the
// rest of another host's rows is not read.
func TestListAlsoRemoteLive(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, e := range []store.Entity{
		{Type: "session", ID: "mine", Lifecycle: strp("running"), HostID: "h1"},
		{Type: "session", ID: "remote-pid", Lifecycle: strp("running"), HostID: "h2", PID: 42},
		{Type: "session", ID: "remote-beat", Lifecycle: strp("running"), HostID: "h2"},
		{Type: "session", ID: "remote-bare", Lifecycle: strp("running"), HostID: "h2"},
		{Type: "session", ID: "remote-ended", Lifecycle: strp("failed"), Terminal: true, EndedAt: unixAt(5), HostID: "h2", PID: 43},
		{Type: "session", ID: "nohost", Lifecycle: strp("running"), PID: 44},
	} {
		if _, err := s.Register(ctx, e, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordHeartbeat(ctx, "session", "remote-beat", unixAt(2), ""); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, store.Filter{HostID: "h1", AlsoRemoteLive: true, OpenOnly: true, EndedSince: unixAt(1)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	if fmt.Sprint(ids) != "[mine remote-beat remote-pid]" {
		t.Errorf("listed %v, want [mine remote-beat remote-pid]", ids)
	}
}
