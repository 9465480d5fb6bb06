package main

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestParseStatTicks(t *testing.T) {
	// Fields 3… of a real stat line; utime (14) is 120, stime (15) 30.
	const rest = " S 1 1234 1234 0 -1 4194560 500 0 0 0 120 30 0 0 20 0 1 0 100 1000000 200 18446744073709551615\n"
	for _, tc := range []struct {
		name, stat string
		want       int64
		wantErr    string
	}{
		{"plain", "1234 (sleep)" + rest, 150, ""},
		{"spaces and parens in the name", "1234 (a b) (c)" + rest, 150, ""},

		// Failure cases
		{"no name", "1234 sleep S 1", 0, "no command name"},
		{"short", "1234 (sleep) S 1 2 3", 0, "fields after the command name"},
		{"not a number", "1234 (sleep) S 1 1234 1234 0 -1 4194560 500 0 0 0 x 30 0", 0, "utime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatTicks([]byte(tc.stat))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseStatTicks = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestStatusKB(t *testing.T) {
	status := []byte("Name:\tsleep\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\n")
	for _, tc := range []struct {
		key  string
		want int64
	}{{"VmRSS:", 1024}, {"VmHWM:", 2048}, {"VmSwap:", 0}} {
		if got := statusKB(status, tc.key); got != tc.want {
			t.Errorf("statusKB(%s) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

// TestReadUsageOfItself reads the test's own /proc entry: the real files,
// not a fixture.
func TestReadUsageOfItself(t *testing.T) {
	u, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.rssKB <= 0 || u.hwmKB < u.rssKB {
		t.Fatalf("usage %+v: want 0 < VmRSS <= VmHWM", u)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100 … 1, unsorted on purpose
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one", ms(7), 0.99, 7 * time.Millisecond},
		{"median of odd", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"median of even is the lower", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 0.99, 99 * time.Millisecond},
		{"p99 of 50 is the slowest", ms(hundred[50:]...), 0.99, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.ds, tc.p); got != tc.want {
				t.Fatalf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestVictims(t *testing.T) {
	for _, tc := range []struct {
		n, k int
		want []int
	}{
		{10, 5, []int{0, 2, 4, 6, 8}},
		{1000, 4, []int{0, 250, 500, 750}},
		{3, 5, []int{0, 1, 2}}, // never more than the fleet
	} {
		got := victims(tc.n, tc.k)
		if len(got) != len(tc.want) {
			t.Fatalf("victims(%d, %d) = %v, want %v", tc.n, tc.k, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("victims(%d, %d) = %v, want %v", tc.n, tc.k, got, tc.want)
			}
		}
	}
}

func TestScanMonitLog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(time.Second)
	seen := map[string]time.Time{}
	// The lines monit 5.33 writes; the last is cut mid-line.
	rest := scanMonitLog("[2026-11-23T21:43:28+0000] info     : 'vm' Monit 5.33.0 started\n"+
		"[2026-11-23T21:43:31+0000] error    : 'p2' process with pid 32367 is a zombie\n"+
		"[2026-11-23T21:43:33+0000] error    : 'p12' process is not running\n"+
		"[2026-11-23T21:43:33+0000] info     : 'p12' trying to restart\n"+
		"[2026-11-23T21:43:34+0000] error    : 'p3' proc", t0, seen)
	if rest != "[2026-11-23T21:43:34+0000] error    : 'p3' proc" {
		t.Fatalf("rest = %q, want the cut line", rest)
	}
	// The line completed by the next read, and a second report of p2.
	scanMonitLog(rest+"ess is not running\n[x] error    : 'p2' process is not running\n", t1, seen)
	want := map[string]time.Time{"p2": t0, "p12": t0, "p3": t1}
	if len(seen) != len(want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	for k, v := range want {
		if !seen[k].Equal(v) {
			t.Errorf("seen[%s] = %v, want %v (the first report)", k, seen[k], v)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"defaults", []string{"-watchdog", "/bin/true"}, ""},
		{"one part", []string{"-watchdog", "/bin/true", "-run", "throughput"}, ""},
		{"stores sizes", []string{"-watchdog", "/bin/true", "-run", "stores", "-transitions", "100", "-stores-n", "100, 5000"}, ""},
		{"fdlimit", []string{"-watchdog", "/bin/true", "-run", "fdlimit", "-fdlimit-n", "400", "-fdlimit-nofile", "256"}, ""},
		{"stores sizes ignored by other parts", []string{"-watchdog", "/bin/true", "-run", "throughput", "-stores-n", "x"}, ""},

		// Failure cases
		{"no binary", nil, "-watchdog: the binary to measure is required"},
		{"unknown part", []string{"-watchdog", "x", "-run", "idle,speed"}, `-run: "speed" is not a part`},
		{"zero processes", []string{"-watchdog", "x", "-n", "0"}, "-n: 0 is not a positive number"},
		{"more kills than processes", []string{"-watchdog", "x", "-n", "10", "-kills", "20"}, "-kills 20 is more than -n 10"},
		{"argument", []string{"-watchdog", "x", "extra"}, `unexpected argument "extra"`},
		{"no window", []string{"-watchdog", "x", "-window", "0s"}, "-window"},
		{"stores size not a number", []string{"-watchdog", "x", "-stores-n", "10000,lots"}, `-stores-n: "lots" is not a positive number`},
		{"stores sizes going down", []string{"-watchdog", "x", "-stores-n", "20000,10000"}, "-stores-n: 10000 does not follow 20000"},
		{"stores size below the transitions", []string{"-watchdog", "x", "-transitions", "500", "-stores-n", "100"}, "-stores-n: 100 is below -transitions 500"},
		{"no samples", []string{"-watchdog", "x", "-samples", "0"}, "-samples: 0 is not a positive number"},
		{"no fdlimit processes", []string{"-watchdog", "x", "-run", "fdlimit", "-fdlimit-n", "0"}, "-fdlimit-n: 0 is not a positive number"},
		{"fdlimit below the own reserve", []string{"-watchdog", "x", "-run", "fdlimit", "-fdlimit-nofile", "32"}, "-fdlimit-nofile: 32 is below 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseFlags(tc.args)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(o.parts) == 0 {
					t.Fatal("no part selected")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// TestFleetKillReaps starts real sleeps, kills one and checks that it is
// gone from /proc (reaped, not a zombie) while the other lives, then
// that stopAll leaves none.
func TestFleetKillReaps(t *testing.T) {
	f, err := newFleet(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	if err := f.ensure(2); err != nil {
		t.Fatal(err)
	}
	dead, alive := f.pid(0), f.pid(1)
	if b, err := os.ReadFile(f.pidfile(0)); err != nil || strings.TrimSpace(string(b)) != itoa(dead) {
		t.Fatalf("pidfile of p1 = %q, %v; want %d", b, err, dead)
	}
	if _, err := f.kill(0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/" + itoa(dead)); err == nil {
		t.Fatalf("pid %d still in /proc after kill: not reaped", dead)
	}
	if _, err := os.Stat("/proc/" + itoa(alive)); err != nil {
		t.Fatalf("pid %d of p2 gone: %v", alive, err)
	}
	if _, err := f.kill(0); err == nil {
		t.Fatal("a second kill of p1 did not fail")
	}
	// ensure replaces the dead one only.
	if err := f.ensure(2); err != nil {
		t.Fatal(err)
	}
	if f.pid(0) == 0 || f.pid(0) == dead || f.pid(1) != alive {
		t.Fatalf("after ensure: pids %d, %d; want a new p1 and p2 still %d", f.pid(0), f.pid(1), alive)
	}
	f.stopAll()
	if _, err := os.Stat("/proc/" + itoa(alive)); err == nil {
		t.Fatalf("pid %d still there after stopAll", alive)
	}
}

// TestMeasureDeathsTimesOut checks that a death the watcher never reports
// counts as missed, not as a latency, and that the run ends.
func TestMeasureDeathsTimesOut(t *testing.T) {
	f, err := newFleet(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	if err := f.ensure(2); err != nil {
		t.Fatal(err)
	}
	blind := detectorFunc(func([]int) map[int]time.Time { return nil })
	d, err := measureDeaths(context.Background(), f, []int{0, 1}, 0, time.Millisecond, blind)
	if err != nil {
		t.Fatal(err)
	}
	if d.killed != 2 || d.missed != 2 || len(d.latencies) != 0 {
		t.Fatalf("deaths %+v: want 2 killed, 2 missed, no latency", d)
	}
}

// TestMeasureDeathsLatency checks that the latency is the watcher's
// recorded time minus the kill time.
func TestMeasureDeathsLatency(t *testing.T) {
	f, err := newFleet(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.stopAll)
	if err := f.ensure(1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var killedAt time.Time
	late := detectorFunc(func(pending []int) map[int]time.Time {
		if killedAt.IsZero() {
			killedAt = time.Now() // at or after the kill: the first poll follows it
		}
		return map[int]time.Time{pending[0]: killedAt.Add(time.Hour)}
	})
	d, err := measureDeaths(context.Background(), f, []int{0}, 0, time.Minute, late)
	if err != nil {
		t.Fatal(err)
	}
	// The kill came after start, the first poll before now.
	if elapsed := time.Since(start); len(d.latencies) != 1 || d.latencies[0] < time.Hour || d.latencies[0] > time.Hour+elapsed {
		t.Fatalf("latencies %v: want one between an hour and an hour and %s", d.latencies, elapsed)
	}
}

type detectorFunc func(pending []int) map[int]time.Time

func (detectorFunc) interval() time.Duration { return time.Millisecond }
func (f detectorFunc) poll(_ context.Context, pending []int) (map[int]time.Time, error) {
	return f(pending), nil
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestRowsVerdicts checks the table's ratios and its "met" column against
// the targets, on figures made up for the purpose.
func TestRowsVerdicts(t *testing.T) {
	ms := time.Millisecond
	res := results{
		wd: watcher{ran: true, n: 1000,
			idle: &idle{cpuMSPerS: 2, ticks: 6, rssKB: 30 * 1024, hwmKB: 31 * 1024,
				quiet: quiet{writeBytes: 4096, syscw: 3, volCSPerS: 25, fsyncs: 3, straceFor: 20 * time.Second}},
			deaths: &deaths{latencies: []time.Duration{10 * ms, 20 * ms, 300 * ms}, killed: 3}},
		monit: watcher{ran: true, n: 1000,
			idle:   &idle{cpuMSPerS: 40, ticks: 120, rssKB: 10 * 1024, hwmKB: 10 * 1024, quiet: quiet{volCSPerS: 1, fsyncs: -1}},
			deaths: &deaths{latencies: []time.Duration{500 * ms}, killed: 2, missed: 1}},
		wdScale: watcher{ran: true, n: 10000,
			idle: &idle{cpuMSPerS: 5, ticks: 15, rssKB: 15 * 1024, hwmKB: 16 * 1024}},
		throughput: 6000,
	}
	rows := res.rows(options{clients: 8})
	for _, tc := range []struct {
		at               int
		what, ratio, met string
	}{
		{0, "CPU per s of wall, 1000 procs", "0.050", "yes"},
		{1, "disk writes in window (write_bytes)", "", "NO"}, // 4096 B
		{2, "write calls in window (syscw)", "", ""},
		{3, "voluntary ctx switches/s", "25.000", "NO"}, // 25 over 20
		{4, "fsync+fdatasync (strace)", "", "NO"},       // 3
		{5, "RSS at window end", "3.00", "NO"},          // 30 MB
		{7, "death → recorded, median, 1000 procs", "0.040", "yes"},
		{8, "p99", "0.600", "NO"}, // 300 ms over 200
		{9, "detected of killed", "", "yes"},
		{11, "disk writes in window (write_bytes)", "", ""}, // no target at scale
		{15, "RSS at window end", "", "yes"},                // at 10,000: 15 MB
		{17, "CPU/s at 10000 ÷ at 1000", "", "NO"},          // 2.5
		{18, "POST transitions/s, 8 clients", "", "yes"},
	} {
		if tc.at >= len(rows) {
			t.Fatalf("%d rows, want one %q at %d", len(rows), tc.what, tc.at)
		}
		r := rows[tc.at]
		if strings.TrimSpace(r.what) != tc.what || r.ratio != tc.ratio || r.met != tc.met {
			t.Errorf("row %d = %+v, want %q with ratio %q and met %q", tc.at, r, tc.what, tc.ratio, tc.met)
		}
	}
	var b strings.Builder
	res.print(&b, options{clients: 8, window: time.Second, kills: 3})
	for _, want := range []string{"watchdog/monit", "monit at 1000: 1 deaths not seen", "2.50"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestStoreRows checks the stores table's ratios (PostgreSQL over SQLite)
// and that a figure one store lacks leaves its cells and ratio blank.
func TestStoreRows(t *testing.T) {
	ms := time.Millisecond
	res := results{
		sqlite: storeFigures{ran: true, name: "SQLite", registered: 2000, moves: 3000, movesP99: 10 * ms, sizes: []sizeFigures{
			{n: 10000, items: 500, scrape: reads{median: 4 * ms, max: 8 * ms}, attention: reads{median: 2 * ms, max: 3 * ms}},
			{n: 100000, added: 90000, registered: 1500, items: 5000, scrape: reads{median: 40 * ms, max: 50 * ms}, attention: reads{median: 10 * ms, max: 12 * ms}},
		}},
		postgres: storeFigures{ran: true, name: "PostgreSQL", registered: 1000, moves: 750, movesP99: 25 * ms, sizes: []sizeFigures{
			{n: 10000, items: 500, scrape: reads{median: 6 * ms, max: 8 * ms}, attention: reads{median: 1 * ms, max: 3 * ms}},
		}},
	}
	rows := res.storeRows(options{clients: 8, moves: 10000})
	for _, tc := range []struct {
		at                      int
		what, sqlite, pg, ratio string
	}{
		{0, "register/s, 8 clients, 0 → 10000 pending", "2000/s", "1000/s", "0.50"},
		{1, "POST transitions/s, 8 clients", "3000/s", "750/s", "0.25"},
		{2, "p99 of one POST", "10.0 ms", "25.0 ms", "2.50"},
		{3, "scrape /metrics, median, 10000 entities", "4.0 ms", "6.0 ms", "1.50"},
		{5, "GET /api/attention, median, 10000 entities", "2.0 ms", "1.0 ms", "0.50"},
		{7, "attention items at 10000", "500", "500", ""},
		{8, "register/s, 8 clients, up to 100000 running", "1500/s", "", ""}, // PostgreSQL did not get there
		{9, "scrape /metrics, median, 100000 entities", "40.0 ms", "", ""},
	} {
		if tc.at >= len(rows) {
			t.Fatalf("%d rows, want %q at %d", len(rows), tc.what, tc.at)
		}
		r := rows[tc.at]
		if strings.TrimSpace(r.what) != tc.what || r.sqlite != tc.sqlite || r.pg != tc.pg || r.ratio != tc.ratio {
			t.Errorf("row %d = %+v, want %q: %q, %q, ratio %q", tc.at, r, tc.what, tc.sqlite, tc.pg, tc.ratio)
		}
	}
	var b strings.Builder
	res.printStores(&b, options{clients: 8, moves: 10000, samples: 20})
	for _, want := range []string{"PostgreSQL/SQLite", "0.25", "note: PostgreSQL: load average"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPGServer starts the stores part's throwaway PostgreSQL cluster for
// real and checks that each database it hands out is a new one that
// takes writes, and that stopping it removes its directory.
func TestPGServer(t *testing.T) {
	if _, err := pgBinDir(); err != nil {
		t.Skip(err) // make test installs postgresql; the bench script too
	}
	ctx := context.Background()
	p, err := startPG(ctx, "", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	dir := p.dir
	a, err := p.database(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.database(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("two databases with one URL %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var fsync string
	if err := conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil || fsync != "on" {
		t.Errorf("fsync = %q, %v; want on (commits as durable as SQLite's)", fsync, err)
	}
	if v, err := p.version(ctx); err != nil || !strings.HasPrefix(v, "PostgreSQL ") {
		t.Errorf("version = %q, %v; want PostgreSQL's version()", v, err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
		t.Errorf("write to a fresh database: %v", err)
	}
	conn.Close(ctx)
	p.stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("cluster directory %s after stop: %v; want it gone", dir, err)
	}
}

// TestElsewhereIn checks that the stores part fails one session in
// failEvery, each once across sizes.
func TestElsewhereIn(t *testing.T) {
	for _, tc := range []struct {
		from, to int
		want     []int
	}{
		{0, 20, []int{19}},
		{0, 60, []int{19, 39, 59}},
		{20, 60, []int{39, 59}},
		{60, 60, nil},
	} {
		if got := elsewhereIn(tc.from, tc.to); !slices.Equal(got, tc.want) {
			t.Errorf("elsewhereIn(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	if hostOf(0) != "" || hostOf(19) != elsewhere {
		t.Errorf("hostOf(0), hostOf(19) = %q, %q; want the daemon's own, then %q", hostOf(0), hostOf(19), elsewhere)
	}
}

// TestJobRuns: a job's runs are summed over every result but skipped
// (no run), other jobs and families left out.
func TestJobRuns(t *testing.T) {
	const exposition = `# HELP watchdog_job_runs_total scheduled job runs
# TYPE watchdog_job_runs_total counter
watchdog_job_runs_total{job="enforce_terminal",result="ok"} 9
watchdog_job_runs_total{job="sweep",result="error"} 1
watchdog_job_runs_total{job="sweep",result="ok"} 4
watchdog_job_runs_total{job="sweep",result="skipped"} 30
watchdog_job_runs_total{job="sweep",result="timeout"} 2
watchdog_job_runs_total{job="sweeper",result="ok"} 100
watchdog_job_duration_seconds_count{job="sweep"} 7
`
	for _, tc := range []struct {
		job  string
		want float64
	}{
		{"sweep", 7},
		{"enforce_terminal", 9},
		{"vacuum", 0},
	} {
		if got := jobRuns([]byte(exposition), tc.job); got != tc.want {
			t.Errorf("jobRuns(%s) = %v, want %v", tc.job, got, tc.want)
		}
	}
}
