package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
)

// alertingDoc is the operator guide whose Alertmanager configuration this
// file runs.
const alertingDoc = "../docs/alerting.md"

// docYAML returns the ```yaml blocks of a Markdown file whose first line is
// the comment "# <file>" (e.g. "# alertmanager.yml"), that line removed.
func docYAML(t *testing.T, path, file string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	parts := strings.Split(string(data), "```yaml\n")
	for _, p := range parts[1:] {
		body, _, ok := strings.Cut(p, "```")
		if !ok {
			t.Fatalf("%s: a ```yaml block is not closed", path)
		}
		first, rest, _ := strings.Cut(body, "\n")
		if strings.HasPrefix(first, "# "+file) {
			blocks = append(blocks, rest)
		}
	}
	return blocks
}

// TestAlertingDocInhibits: the Alertmanager configuration docs/alerting.md
// recommends is valid (amtool check-config), and in a real Alertmanager
// (Debian package prometheus-alertmanager) a pushed WatchdogEntity alert
// inhibits WatchdogCriticalEntities of its host and type, and of no other.
func TestAlertingDocInhibits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Alertmanager; skipped with -short")
	}
	amBin, err := exec.LookPath("prometheus-alertmanager")
	if err != nil {
		t.Fatal("prometheus-alertmanager not installed: make test installs the Debian package prometheus-alertmanager (Makefile APT_PACKAGES)")
	}
	amtool, err := exec.LookPath("amtool")
	if err != nil {
		t.Fatal("amtool not installed: make test installs the Debian package prometheus-alertmanager (Makefile APT_PACKAGES)")
	}
	blocks := docYAML(t, alertingDoc, "alertmanager.yml")
	var inhibit, routes string
	for _, b := range blocks {
		switch {
		case strings.HasPrefix(b, "inhibit_rules:"):
			inhibit = b
		case strings.HasPrefix(strings.TrimSpace(b), "- matchers:"):
			routes = b
		}
	}
	if inhibit == "" || routes == "" {
		t.Fatalf("%s: want a \"# alertmanager.yml\" block with inhibit_rules and one with a route; found %d blocks", alertingDoc, len(blocks))
	}
	// The route block is the list under route.routes: indent it one level.
	var indented strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(routes, "\n"), "\n") {
		indented.WriteString("  " + line + "\n")
	}
	cfg := "route:\n  receiver: default\n  routes:\n" + indented.String() +
		"receivers:\n  - name: default\n  - name: pager\n" + inhibit
	dir := t.TempDir()
	path := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(amtool, "check-config", path).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config on %s's configuration: %v\n%s\n%s", alertingDoc, err, out, cfg)
	}

	addr := freeLoopbackAddr(t)
	logs := &testenv.Buffer{}
	cmd := exec.Command(amBin, "--config.file="+path, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	cmd.Stdout, cmd.Stderr = logs, logs
	exited := startProcess(t, "alertmanager", cmd, logs, false)
	base := "http://" + addr
	client := &http.Client{Timeout: requestCeiling}
	testenv.Eventually(t, "alertmanager to be ready", realDataDeadline, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("alertmanager exited (%v):\n%s", err, logs.String())
		default:
		}
		err := get(client, base+"/-/ready", nil)
		return err == nil, fmt.Sprint(err)
	})

	// As the daemon pushes it and as Prometheus sends the rule's alerts
	// (the host target label set as the doc says).
	now := time.Now().UTC()
	alert := func(labels map[string]string) map[string]any {
		return map[string]any{"labels": labels, "startsAt": now.Format(time.RFC3339), "endsAt": now.Add(time.Hour).Format(time.RFC3339)}
	}
	alerts := []map[string]any{
		alert(map[string]string{"alertname": "WatchdogEntity", "severity": "critical", "host": "host-a",
			"entity_type": "session", "entity_id": "build-4711", "reason_code": "system.health.process_dead_no_terminal"}),
		alert(map[string]string{"alertname": "WatchdogCriticalEntities", "severity": "critical", "host": "host-a",
			"instance": "host-a:9715", "job": "watchdog", "entity_type": "session"}),
		alert(map[string]string{"alertname": "WatchdogCriticalEntities", "severity": "critical", "host": "host-b",
			"instance": "host-b:9715", "job": "watchdog", "entity_type": "session"}),
		alert(map[string]string{"alertname": "WatchdogCriticalEntities", "severity": "critical", "host": "host-a",
			"instance": "host-a:9715", "job": "watchdog", "entity_type": "play"}),
	}
	body, _ := json.Marshal(alerts)
	resp, err := client.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: %s", resp.Status)
	}

	// Only the rule's alert for the pushed alert's host and type is
	// inhibited: another host's, or another type's, still pages.
	want := map[string]string{
		"WatchdogEntity host-a session":           "active",
		"WatchdogCriticalEntities host-a session": "suppressed",
		"WatchdogCriticalEntities host-b session": "active",
		"WatchdogCriticalEntities host-a play":    "active",
	}
	testenv.Eventually(t, "the inhibition to take effect", realDataDeadline, func() (bool, string) {
		var got []struct {
			Labels map[string]string `json:"labels"`
			Status struct {
				State       string   `json:"state"`
				InhibitedBy []string `json:"inhibitedBy"`
			} `json:"status"`
		}
		var b strings.Builder
		if err := get(client, base+"/api/v2/alerts", &b); err != nil {
			return false, err.Error()
		}
		if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
			return false, err.Error()
		}
		seen := map[string]string{}
		for _, a := range got {
			seen[a.Labels["alertname"]+" "+a.Labels["host"]+" "+a.Labels["entity_type"]] = a.Status.State
		}
		for k, v := range want {
			if seen[k] != v {
				return false, fmt.Sprintf("%s is %q, want %q (all: %v)", k, seen[k], v, seen)
			}
		}
		return true, ""
	})
}

// TestAlertingDocScrapeConfig: the scrape configuration docs/alerting.md
// gives (the host target label the inhibition matches on) is one
// Prometheus accepts.
func TestAlertingDocScrapeConfig(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not installed: make test installs the Debian package prometheus")
	}
	blocks := docYAML(t, alertingDoc, "prometheus.yml")
	if len(blocks) == 0 {
		t.Fatalf("%s has no \"# prometheus.yml\" block", alertingDoc)
	}
	for i, b := range blocks {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("prometheus-%d.yml", i))
		if err := os.WriteFile(path, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check config on %s's block %d: %v\n%s\n%s", alertingDoc, i, err, out, b)
		}
		if !strings.Contains(b, "host:") {
			t.Errorf("%s: the prometheus.yml block sets no host target label, which the inhibition needs:\n%s", alertingDoc, b)
		}
	}
}
