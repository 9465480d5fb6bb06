package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/leader"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
)

// TestStatusLineSaysTheStoreFails: the line is the counts while the store
// works; once it fails, the failure first, since when (the first failure,
// not the latest), and the last counts read; the counts alone again after
// it recovers.
func TestStatusLineSaysTheStoreFails(t *testing.T) {
	t0 := time.Date(2026, 5, 24, 14, 2, 11, 0, time.UTC)
	counts := func(open, crit int) *live.Counts {
		return &live.Counts{Open: open, OpenBySeverity: map[state.Severity]int{state.SeverityCritical: crit}, QueueBySeverity: map[state.Severity]int{}}
	}
	diskFull := errors.New("store unavailable: the disk is full\nfree some space")
	var m statusMemory
	steps := []struct {
		name    string
		at      time.Time
		failure error
		counts  *live.Counts
		want    string
	}{
		{"failing before any counts", t0.Add(-time.Minute), diskFull, nil,
			"store failing since 14:01:11Z: store unavailable: the disk is full; free some space; last counts: none read yet"},
		{"works", t0.Add(-30 * time.Second), nil, counts(2, 1),
			"2 open entities: 1 critical, 0 warning, 0 info; 0 ended within the failure window; 0 queue items (0 critical, 0 warning, 0 info)"},
		{"the store fails, nothing read", t0, diskFull, nil,
			"store failing since 14:02:11Z: store unavailable: the disk is full; free some space; last counts: 2 open entities: 1 critical"},
		{"still failing, the view still reads", t0.Add(time.Minute), errors.New("write probe: no such table: health_probe"), counts(3, 2),
			"store failing since 14:02:11Z: write probe: no such table: health_probe; last counts: 3 open entities: 2 critical"},
		{"failing into the next day", t0.Add(24 * time.Hour), diskFull, nil,
			"store failing since 2026-05-24 14:02:11Z: store unavailable"},
		{"recovered", t0.Add(25 * time.Hour), nil, counts(1, 0),
			"1 open entities: 0 critical, 0 warning, 0 info; 0 ended"},
		{"fails again: a new since", t0.Add(26 * time.Hour), diskFull, nil,
			"store failing since 16:02:11Z: store unavailable: the disk is full; free some space; last counts: 1 open entities"},
	}
	for _, s := range steps {
		got := m.line(s.at, s.failure, s.counts)
		if !strings.HasPrefix(got, s.want) {
			t.Errorf("%s: STATUS=%s\nwant it to start %s", s.name, got, s.want)
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: STATUS= spans lines: %q", s.name, got)
		}
	}
}

// TestStatusFollowsAFailingStore: a real daemon on a real SQLite file,
// under a fake systemd: STATUS= carries the counts; a store that can no
// longer be written (its tables gone, as a damaged file would be)
// turns STATUS= into the failure with the last counts; it goes back to the
// counts when the store recovers, and a deleted database file reads as
// failing too.
func TestStatusFollowsAFailingStore(t *testing.T) {
	// A daemon alone with its file writes nothing while idle (ADR-0041):
	// the write probe, due after storeProbeIdle without a committed
	// write, is what finds the failing store here.
	was := storeProbeIdle
	storeProbeIdle = time.Second
	t.Cleanup(func() { storeProbeIdle = was })
	db := filepath.Join(t.TempDir(), "w.db")
	conn := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "")
	cfg := config.Default()
	cfg.Store.DSN = db
	cfg.Listen = "127.0.0.1:0"
	cfg.Jobs = config.Jobs{Sweep: "@every 1h", EnforceTerminal: "@every 1h", ReapPhantoms: "@every 1h", CheckSchedules: "@every 1h", Vacuum: "@every 1h"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Log: zap.NewNop(), Version: "test"}) }()
	defer func() {
		cancel()
		<-done
	}()
	waitDatagram(t, conn, "READY=1", ceiling)

	// Another writer on the file (as `watchdog register --db` is): the
	// counts STATUS= shows, and then remembers.
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	running := "running"
	if _, err := st.Register(context.Background(), store.Entity{Type: "session", ID: "s1", Lifecycle: &running}, "orchestrator", time.Now()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	waitDatagram(t, conn, "STATUS=1 open entities", ceiling)

	// The daemon's own writes fail, and so does the write probe
	// (ADR-0038).
	h := testenv.SQL(t, db)
	for _, q := range []string{"ALTER TABLE health_probe RENAME TO health_probe_hidden", "ALTER TABLE daemons RENAME TO daemons_hidden"} {
		if _, err := h.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	got := waitDatagram(t, conn, "STATUS=store failing since", ceiling)
	if last := got[len(got)-1]; !strings.Contains(last, "no such table: health_probe") || !strings.Contains(last, "; last counts: 1 open entities") {
		t.Errorf("STATUS= while the store fails: %q", last)
	}

	for _, q := range []string{"ALTER TABLE health_probe_hidden RENAME TO health_probe", "ALTER TABLE daemons_hidden RENAME TO daemons"} {
		if _, err := h.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	got = waitDatagram(t, conn, "STATUS=1 open entities", ceiling)
	if last := got[len(got)-1]; strings.Contains(last, "failing") {
		t.Errorf("STATUS= after the store recovered: %q", last)
	}

	for _, f := range []string{db, db + "-wal", db + "-shm"} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	got = waitDatagram(t, conn, "STATUS=store failing since", ceiling)
	if last := got[len(got)-1]; !strings.Contains(last, "; last counts: 1 open entities") {
		t.Errorf("STATUS= after the database was deleted: %q", last)
	}
}

// TestOwnership: a daemon owns (counts in its gauges, pushes) its own
// host's entities; while it leads, the host-less ones and those of hosts
// with no daemon alive. Alone on its store it leads even when its
// leadership backend says no (a store too slow to renew a lease), so it
// keeps counting everything; in a fleet a follower owns its host alone.
func TestOwnership(t *testing.T) {
	ctx := context.Background()
	elector := func(leads bool) *leader.Elector {
		e := leader.New(fixedLock(leads), leader.Options{})
		e.Try(ctx)
		return e
	}
	tests := []struct {
		name  string
		leads bool
		alive []string // hosts whose daemon was seen; nil: no tick yet
		owns  map[string]bool
		lead  bool
	}{
		{"alone, leading", true, []string{"h1"}, map[string]bool{"h1": true, "h2": true, "": true}, true},
		{"alone, lease not renewed", false, []string{"h1"}, map[string]bool{"h1": true, "h2": true, "": true}, true},
		{"fleet leader", true, []string{"h1", "h2"}, map[string]bool{"h1": true, "h2": false, "": true, "h3-no-daemon": true}, true},
		{"fleet follower", false, []string{"h1", "h2"}, map[string]bool{"h1": true, "h2": false, "": false, "h3-no-daemon": false}, false},
		{"before the first presence tick, not leading", false, nil, map[string]bool{"h1": true, "h2": false, "": false}, false},
		{"before the first presence tick, leading", true, nil, map[string]bool{"h1": true, "h2": false, "": true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fleet{self: "h1", elector: elector(tt.leads)}
			if tt.alive != nil {
				m := map[string]bool{}
				for _, h := range tt.alive {
					m[h] = true
				}
				f.alive.Store(&m)
			}
			for host, want := range tt.owns {
				if got := f.Owns(host); got != want {
					t.Errorf("owns %q = %v, want %v", host, got, want)
				}
				// The view holds exactly what the daemon owns (ADR-0056).
				if got := f.Hosts().Has(host); got != want {
					t.Errorf("hosts %+v has %q = %v, want %v", f.Hosts(), host, got, want)
				}
			}
			if got := f.Leader(); got != tt.lead {
				t.Errorf("leads = %v, want %v", got, tt.lead)
			}
		})
	}
}

// fixedLock is a leadership backend that always answers the same.
type fixedLock bool

func (l fixedLock) TryLock(context.Context) (bool, error) { return bool(l), nil }
func (fixedLock) Unlock(context.Context) error            { return nil }
