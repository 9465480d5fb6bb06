package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestFdlimitRowsVerdicts checks the fdlimit table's "met" column against
// the targets, on figures made up for the purpose.
func TestFdlimitRowsVerdicts(t *testing.T) {
	ms := time.Millisecond
	good := func() *fdlimitFigures {
		return &fdlimitFigures{n: 10, nofile: "1024/1024", regOK: 10, regRate: 100,
			readyDuring: reqFigures{n: 5, ok: 5}, readyAft: reqFigures{n: 3, ok: 3},
			pidfdMode: 4, pollMode: 6, heldPidfds: 4, openFDs: 40,
			full:    failCase{ran: true, seen: true, took: 150 * ms},
			recover: failCase{ran: true, seen: true, took: time.Second},
			byPidfd: deaths{killed: 4, latencies: []time.Duration{5 * ms, 6 * ms, 7 * ms, 8 * ms}},
			byPoll:  deaths{killed: 6, latencies: []time.Duration{ms, ms, ms, ms, ms, 3 * time.Second}},
			deleted: failCase{ran: true, seen: true, took: 3 * ms},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(f *fdlimitFigures)
		what   string // the row whose verdict is checked
		want   string
	}{
		{"all met", func(*fdlimitFigures) {}, "registrations failed", "yes"},
		{"all met: readyz", func(*fdlimitFigures) {}, "/readyz 200, registering and watching", "yes"},
		{"all met: deaths", func(*fdlimitFigures) {}, "deaths recorded, polled", "yes"},
		{"all met: polled delays", func(*fdlimitFigures) {}, "kill → recorded (polled), median / p99", "yes"},
		{"all met: full disk", func(*fdlimitFigures) {}, "disk full → /readyz 503", "yes"},
		{"all met: deleted", func(*fdlimitFigures) {}, "database deleted → /readyz 503", "yes"},

		// What fails a target
		{"a registration failed", func(f *fdlimitFigures) { f.regOK, f.regFailed = 9, 1 }, "registrations failed", "NO"},
		{"one readyz not 200", func(f *fdlimitFigures) { f.readyDuring.ok = 4 }, "/readyz 200, registering and watching", "NO"},
		{"no readyz asked", func(f *fdlimitFigures) { f.readyDuring = reqFigures{} }, "/readyz 200, registering and watching", "NO"},
		{"one not watched", func(f *fdlimitFigures) { f.pollMode = 5 }, "watched by pidfd / polled (gauge)", "NO"},
		{"full disk over 2 s", func(f *fdlimitFigures) { f.full.took = 2100 * ms }, "disk full → /readyz 503", "NO"},
		{"full disk never", func(f *fdlimitFigures) { f.full.seen = false }, "disk full → /readyz 503", "NO"},
		{"full disk not measured", func(f *fdlimitFigures) { f.full = failCase{note: "not measured: no root"} }, "disk full → /readyz 503", "-"},
		{"not ready again", func(f *fdlimitFigures) { f.recover.seen = false }, "space freed → /readyz 200", "NO"},
		{"a pidfd death missed", func(f *fdlimitFigures) { f.byPidfd.missed, f.byPidfd.latencies = 1, f.byPidfd.latencies[1:] }, "deaths recorded, pidfd", "NO"},
		{"a polled death missed", func(f *fdlimitFigures) { f.byPoll.missed, f.byPoll.latencies = 1, f.byPoll.latencies[1:] }, "deaths recorded, polled", "NO"},
		{"pidfd p99 over 200 ms", func(f *fdlimitFigures) { f.byPidfd.latencies[3] = 250 * ms }, "kill → recorded (pidfd), median / p99", "NO"},
		{"polled p99 over 5 s", func(f *fdlimitFigures) { f.byPoll.latencies[5] = 5100 * ms }, "kill → recorded (polled), median / p99", "NO"},
		{"none polled: no verdict", func(f *fdlimitFigures) { f.byPoll = deaths{} }, "deaths recorded, polled", ""},
		{"deleted over 5 s", func(f *fdlimitFigures) { f.deleted.took = 6 * time.Second }, "database deleted → /readyz 503", "NO"},
		{"readyz failed after the deaths", func(f *fdlimitFigures) { f.readyAft.ok = 0 }, "/readyz 200 after the deaths", "NO"},
		{"too many open files", func(f *fdlimitFigures) { f.tooMany = 2 }, `log lines "too many open files"`, "NO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.change(f)
			var got *row
			rows := fdlimitRows(f)
			for i := range rows {
				if strings.TrimSpace(rows[i].what) == tc.what {
					got = &rows[i]
				}
			}
			if got == nil {
				t.Fatalf("no row %q in %+v", tc.what, rows)
			}
			if got.met != tc.want {
				t.Errorf("row %+v: met %q, want %q", *got, got.met, tc.want)
			}
		})
	}
	// The printed table says what was measured and how.
	var b strings.Builder
	(&results{fdlimit: good()}).printFdlimit(&b, options{fdlimitNofile: 1024, clients: 8})
	for _, want := range []string{"prlimit --nofile=1024", "read back: 1024/1024", "4 / 6", "150.0 ms", "6.0 ms / 8.0 ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestMetricValues(t *testing.T) {
	const exp = `# HELP watchdog_watched_processes local processes watched
# TYPE watchdog_watched_processes gauge
watchdog_watched_processes{mode="pidfd"} 480
watchdog_watched_processes{mode="poll"} 4520
watchdog_watched_processes_other 7
watchdog_pidwatch_overflow_total 0
watchdog_http_connections{state="open",x="y"} 3
watchdog_bad{mode="x"} notanumber
`
	for _, tc := range []struct {
		family string
		want   map[string]float64
	}{
		{"watchdog_watched_processes", map[string]float64{"pidfd": 480, "poll": 4520}}, // not _other
		{"watchdog_pidwatch_overflow_total", map[string]float64{"": 0}},
		{"watchdog_http_connections", map[string]float64{"open": 3}}, // the first label
		{"watchdog_bad", map[string]float64{}},
		{"watchdog_absent", map[string]float64{}},
	} {
		got := metricValues([]byte(exp), tc.family)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.family, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %v, want %v", tc.family, got, tc.want)
			}
		}
	}
}

func TestFdinfoPid(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       int
		ok         bool
	}{
		{"pidfd", "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1234\nPid:\t4242\nNSpid:\t4242\n", 4242, true},
		{"reaped", "pos:\t0\nPid:\t-1\n", 0, false},
		{"not a pidfd", "pos:\t0\nflags:\t02\n", 0, false},
		{"garbage", "Pid:\tx\n", 0, false},
	} {
		got, ok := fdinfoPid([]byte(tc.info))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: %d %v, want %d %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseStartTicks(t *testing.T) {
	// Fields 3… of a real stat line; starttime (22) is 100.
	const rest = " S 1 1234 1234 0 -1 4194560 500 0 0 0 120 30 0 0 20 0 1 0 100 1000000 200 18446744073709551615\n"
	for _, tc := range []struct {
		name, stat string
		want       int64
		wantErr    string
	}{
		{"plain", "1234 (sleep)" + rest, 100, ""},
		{"spaces and parens in the name", "1234 (a) b) c)" + rest, 100, ""},

		// Failure cases
		{"no name", "1234 sleep S 1", 0, "no command name"},
		{"short", "1234 (sleep) S 1 2 3", 0, "want at least 20"},
		{"not a number", "1234 (sleep) S 1 1234 1234 0 -1 4194560 500 0 0 0 120 30 0 0 20 0 1 0 x 1", 0, "starttime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStartTicks([]byte(tc.stat))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStartTicks = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// TestStartTimeOfItself reads the test's own start time from /proc: after
// boot, not after now.
func TestStartTimeOfItself(t *testing.T) {
	bt, err := bootTime()
	if err != nil {
		t.Fatal(err)
	}
	st, err := startTime(os.Getpid(), bt, clockTicks())
	if err != nil {
		t.Fatal(err)
	}
	if now := float64(time.Now().Unix()); st < float64(bt) || st > now+1 {
		t.Fatalf("start time %.2f: want between boot %d and now %.0f", st, bt, now)
	}
}

func TestNofileLimit(t *testing.T) {
	const limits = "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max cpu time              unlimited            unlimited            seconds   \n" +
		"Max open files            1024                 4096                 files     \n"
	if got := nofileLimit(limits); got != "1024/4096" {
		t.Errorf("nofileLimit = %q, want 1024/4096", got)
	}
	if got := nofileLimit("Max cpu time unlimited unlimited seconds\n"); got != "?" {
		t.Errorf("nofileLimit without the line = %q, want ?", got)
	}
}

func TestBudgetLine(t *testing.T) {
	log := []byte(`{"level":"info","msg":"listening","addr":"127.0.0.1:1"}
{"level":"info","msg":"file descriptor budget","fd_limit":1024,"reserved_own":64,"reserved_connections":480,"pidfd_cap":480}
`)
	if got, want := budgetLine(log), "limit 1024: own 64, connections 480, pidfds 480"; got != want {
		t.Errorf("budgetLine = %q, want %q", got, want)
	}
	if got := budgetLine([]byte(`{"msg":"listening"}`)); got != "" {
		t.Errorf("budgetLine without the line = %q, want empty", got)
	}
}

func TestCountTooMany(t *testing.T) {
	log := []byte(`{"msg":"accept failed","error":"accept4: too many open files"}
{"msg":"ok"}
{"msg":"store","error":"open db: Too Many Open Files"}
`)
	if got := countTooMany(log); got != 2 {
		t.Errorf("countTooMany = %d, want 2", got)
	}
}

func TestDeadSince(t *testing.T) {
	item := func(id, health, lifecycle string, since float64) listItem {
		it := listItem{ID: id, HealthSince: since}
		it.State.Health, it.State.Lifecycle = health, lifecycle
		return it
	}
	got := deadSince([]listItem{
		item("p1", "process_dead", "running", 100.5),
		item("p2", "ok", "running", 90),          // alive
		item("p3", "process_dead", "running", 0), // no moment: not counted
		item("p4", "unknown", "failed", 101.25),  // ended by the reaper after its death
		item("p5", "ok", "", 95),                 // a legacy entity: no lifecycle
	})
	want := map[string]float64{"p1": 100.5, "p4": 101.25}
	if len(got) != len(want) {
		t.Fatalf("deadSince = %v, want %v", got, want)
	}
	for id, s := range want {
		if !got[id].Equal(fromSeconds(s)) {
			t.Errorf("%s: %v, want %v", id, got[id], fromSeconds(s))
		}
	}
}
