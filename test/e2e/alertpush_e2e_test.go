package e2e

// Issue 16's push to Alertmanager, shown against a real Alertmanager (the
// Debian package prometheus-alertmanager, started here on a free loopback
// port) and the built daemon: a killed session's item fires there with its
// labels, snoozing it resolves it there, and a restarted daemon neither
// duplicates nor loses the alert that still fires.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
)

// alertmanagerBin is where Debian's prometheus-alertmanager puts it.
const alertmanagerBin = "/usr/bin/prometheus-alertmanager"

// amAlert is what GET /api/v2/alerts answers of one alert.
type amAlert struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	EndsAt   time.Time         `json:"endsAt"`
	Status   struct {
		State string `json:"state"`
	} `json:"status"`
}

// startAlertmanager runs a real Alertmanager on a free loopback port with
// a route that sends everything nowhere, and returns its base URL once it
// is ready. It is stopped when the test ends.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(alertmanagerBin); err != nil {
		t.Skipf("%s is missing (apt-get install -y prometheus-alertmanager): %v", alertmanagerBin, err)
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "alertmanager.yml", "route:\n  receiver: blackhole\n  group_wait: 1s\nreceivers:\n  - name: blackhole\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(dir, "alertmanager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(alertmanagerBin, "--config.file", cfg, "--storage.path", filepath.Join(dir, "data"),
		"--web.listen-address", addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start alertmanager: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the exit is reported through done
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited already
		select {
		case <-done:
		case <-time.After(rmtDeadline):
			cmd.Process.Kill() //nolint:errcheck // best effort at cleanup
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("alertmanager log:\n%s", b)
		}
	})
	base := "http://" + addr
	testenv.Eventually(t, "alertmanager ready", rmtDeadline, func() (bool, string) {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("alertmanager exited before it was ready:\n%s", b)
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return base
}

// amAlerts reads the WatchdogEntity alerts Alertmanager holds.
func amAlerts(t *testing.T, base string) []amAlert {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts?filter=" + url.QueryEscape(`alertname="WatchdogEntity"`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v2/alerts: %s %s", resp.Status, body)
	}
	var out []amAlert
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("GET /api/v2/alerts: %v", err)
	}
	return out
}

// matching returns the alerts whose labels hold every one of want.
func matching(alerts []amAlert, want map[string]string) []amAlert {
	var out []amAlert
	for _, a := range alerts {
		ok := true
		for k, v := range want {
			ok = ok && a.Labels[k] == v
		}
		if ok {
			out = append(out, a)
		}
	}
	return out
}

// sameInstant compares times as Alertmanager keeps them: to the
// millisecond (its API writes three decimals).
func sameInstant(a, b time.Time) bool { return a.Sub(b).Abs() < time.Millisecond }

// firing reports whether a is active now: not ended.
func firing(a amAlert) bool { return a.EndsAt.IsZero() || a.EndsAt.After(time.Now()) }

// amServe starts `watchdog serve` on the database in dir (so a second
// call after stop is a restart on the same store) and waits for /readyz;
// stop sends SIGTERM and waits for the exit.
func amServe(t *testing.T, dir, sections string) (d *rmtDaemon, stop func()) {
	t.Helper()
	db := filepath.Join(dir, "watchdog.db")
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf("store:\n  dsn: %q\nlisten: 127.0.0.1:0\nauth: none\n%slog:\n  level: info\n  format: json\n", db, sections))
	d, stop = rmtServe(t, cfg, filepath.Join(dir, fmt.Sprintf("serve-%d.log", time.Now().UnixNano())))
	d.db = db
	return d, stop
}

// TestAlertmanagerPush is issue 16's "what must be shown" for the push.
func TestAlertmanagerPush(t *testing.T) {
	am := startAlertmanager(t)
	// An alert sent ends 4×resend later unless sent again: 20s of slack
	// for a daemon slowed by a loaded machine before a firing alert reads
	// resolved.
	const resend = 5 * time.Second
	sections := fmt.Sprintf(`host_id: am-e2e-host
thresholds:
  terminal_grace: 1s
  failure_window: 1h
jobs:
  sweep: "@every 1s"
  enforce_terminal: "@every 1s"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@every 1h"
alertmanager:
  urls: [%q]
  resend_every: %s
  runbook_url: https://wiki.example.org/watchdog/reasons
`, am, resend)
	dir := t.TempDir()
	d, stop := amServe(t, dir, sections)

	// Two sessions die: one to snooze, one that fires across a restart.
	pids := map[string]*exec.Cmd{"s-snooze": testenv.Sleep(t), "s-keep": testenv.Sleep(t)}
	for id, p := range pids {
		d.register(t, fmt.Sprintf(`{"type":"session","id":%q,"label":"e2e %s","lifecycle":"running","pid":%d}`, id, id, p.Process.Pid))
	}
	for _, p := range pids {
		if err := p.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	// The queue settles once enforce_terminal ended both: their items
	// from then on are the ones that fire.
	items := map[string]attention.Item{}
	testenv.Eventually(t, "both dead sessions ended, each with a critical or warning item", truthWait, func() (bool, string) {
		// The entities are read before the queue: once both read ended,
		// the queue read after them holds their ends' items, never the
		// deaths' items of a moment before (the end subsumes those).
		ended := map[string]string{}
		for id := range pids {
			ended[id] = *d.must(t, "session", id).Lifecycle
		}
		q := d.queue(t, "")
		var seen []string
		for id := range pids {
			its := itemsOf(q, "session", id)
			seen = append(seen, fmt.Sprintf("%s: %v %v", id, ended[id], codesOf(its)))
			if ended[id] == "running" || len(its) != 1 || (its[0].Severity != state.SeverityCritical && its[0].Severity != state.SeverityWarning) {
				return false, strings.Join(seen, "; ")
			}
			items[id] = its[0]
		}
		return true, ""
	})
	labelsOf := func(id string) map[string]string {
		it := items[id]
		host := d.must(t, "session", id).HostID
		if host == "" {
			host = "am-e2e-host"
		}
		return map[string]string{"alertname": "WatchdogEntity", "entity_type": "session", "entity_id": id,
			"reason_code": string(it.Reason.Code), "severity": string(it.Severity), "host": host}
	}

	// Each fires in Alertmanager with its labels and first_seen_at.
	for id, it := range items {
		want := labelsOf(id)
		testenv.Eventually(t, id+"'s alert firing in alertmanager", truthWait, func() (bool, string) {
			got := matching(amAlerts(t, am), want)
			return len(got) == 1 && firing(got[0]) && sameInstant(got[0].StartsAt, it.FirstSeenAt.Time), fmt.Sprintf("%+v", amAlerts(t, am))
		})
	}

	// Snoozing one with the body its action advertises resolves it there.
	var snooze attention.Action
	for _, a := range items["s-snooze"].Actions {
		if a.ID == "snooze" {
			snooze = a
		}
	}
	body, err := json.Marshal(snooze.Body)
	if err != nil || snooze.Endpoint == "" {
		t.Fatalf("no snooze action on %+v (%v)", items["s-snooze"], err)
	}
	if code, resp := d.do(t, snooze.Method, snooze.Endpoint, string(body)); code != http.StatusOK {
		t.Fatalf("snooze: %d %s", code, resp)
	}
	testenv.Eventually(t, "the snoozed item's alert resolved in alertmanager", truthWait, func() (bool, string) {
		got := matching(amAlerts(t, am), labelsOf("s-snooze"))
		return len(got) == 0 || !firing(got[0]), fmt.Sprintf("%+v", got)
	})

	// A restart on the same store sends the same alert: one, same start.
	keep := labelsOf("s-keep")
	stop()
	restarted := time.Now()
	d, _ = amServe(t, dir, sections)
	testenv.Eventually(t, "the restarted daemon's push of s-keep", truthWait, func() (bool, string) {
		got := matching(amAlerts(t, am), keep)
		// The old daemon's last push ended it 4×resend after it was
		// sent; a later end is the new daemon's.
		return len(got) == 1 && got[0].EndsAt.After(restarted.Add(4*resend)), fmt.Sprintf("%+v", got)
	})
	all := amAlerts(t, am)
	got := matching(all, map[string]string{"entity_id": "s-keep"})
	if len(got) != 1 || !sameInstant(got[0].StartsAt, items["s-keep"].FirstSeenAt.Time) || !firing(got[0]) {
		t.Errorf("after the restart alertmanager holds %+v for s-keep, want one firing alert starting at %v", got, items["s-keep"].FirstSeenAt.Time)
	}
	if got := matching(all, labelsOf("s-snooze")); len(got) > 0 && firing(got[0]) {
		t.Errorf("the snoozed item fires again after the restart: %+v", got)
	}
	if code, m := d.do(t, "GET", "/metrics", ""); code != http.StatusOK || !strings.Contains(m, `watchdog_alertmanager_pushes_total{result="success"}`) {
		t.Errorf("/metrics: %d, no watchdog_alertmanager_pushes_total{result=\"success\"}", code)
	}
}
