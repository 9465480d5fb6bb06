package deploy

import (
	"os/exec"
	"strings"
	"testing"
)

// alertmanagerExample is the example route for the alerts watchdog
// pushes (package alertpush).
const alertmanagerExample = "alertmanager/alertmanager.yml"

// amtool is Debian's prometheus-alertmanager's checker; the test skips,
// saying how to get it, only where it cannot be had.
func amtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("amtool")
	if err != nil {
		t.Skip("amtool is not installed (apt-get install -y prometheus-alertmanager)")
	}
	return path
}

// TestAlertmanagerExampleChecks: amtool accepts the example, and it
// routes the pushed alerts by severity and leaves other alerts alone.
func TestAlertmanagerExampleChecks(t *testing.T) {
	bin := amtool(t)
	if out, err := exec.Command(bin, "check-config", alertmanagerExample).CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config %s: %v\n%s", alertmanagerExample, err, out)
	}
	tests := []struct {
		labels []string
		want   string
	}{
		{[]string{"alertname=WatchdogEntity", "severity=critical", "entity_type=session", "reason_code=system.health.process_dead_no_terminal", "host=h"}, "watchdog-pager"},
		{[]string{"alertname=WatchdogEntity", "severity=warning", "entity_type=play", "reason_code=run.health.stalled", "host=h"}, "watchdog-chat"},
		{[]string{"alertname=WatchdogDown", "severity=critical"}, "default"},
	}
	for _, tt := range tests {
		args := append([]string{"config", "routes", "test", "--config.file=" + alertmanagerExample}, tt.labels...)
		cmd := exec.Command(bin, args...)
		out, err := cmd.Output() // stderr has a warning about --alertmanager.url
		if err != nil {
			t.Errorf("amtool %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%v routes to %q, want %q", tt.labels, got, tt.want)
		}
	}
}
