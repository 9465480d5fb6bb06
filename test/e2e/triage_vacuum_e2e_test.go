package e2e

// The triage log's vacuum and its HTTP read, with the built binary: the
// daemon's vacuum job drops the rows older than
// thresholds.triage_retention, and GET /api/attention/triage shows what
// is left; the snooze itself is the dismissals' own vacuum's, untouched.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/wire"
)

func TestTriageLogVacuumedByRetention(t *testing.T) {
	// A retention of a second and a vacuum every second: the snooze's
	// log row goes within seconds of the snooze, by the job itself.
	d := rmtStartWith(t, false, `thresholds:
  triage_retention: 1s
jobs:
  sweep: "@every 1h"
  enforce_terminal: "@every 1h"
  reap_phantoms: "@every 1h"
  check_schedules: "@every 1h"
  vacuum: "@every 1s"
`)
	d.register(t, `{"type":"session","id":"s-1","lifecycle":"running"}`)
	if code, body := d.transition(t, "session", "s-1", `{"to":"failed","actor":"orchestrator","reason":{"code":"run.failed.exit_nonzero","message":"exit 3"}}`); code != http.StatusOK {
		t.Fatalf("transition: %d %s", code, body)
	}
	fp := "session:s-1:run.failed.exit_nonzero"
	testenv.Eventually(t, "the failure in the queue", ceiling, func() (bool, string) {
		_, body := d.do(t, "GET", "/api/attention", "")
		return strings.Contains(body, fp), body
	})
	if code, body := d.do(t, "POST", "/api/attention/snooze", fmt.Sprintf(`{"fingerprint":%q,"for":3600}`, fp)); code != http.StatusOK {
		t.Fatalf("snooze: %d %s", code, body)
	}

	testenv.Eventually(t, "the triage log emptied by the vacuum job", ceiling, func() (bool, string) {
		code, body := d.do(t, "GET", "/api/attention/triage", "")
		var page wire.TriagePage
		if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil {
			return false, fmt.Sprintf("%d %s", code, body)
		}
		log, _ := os.ReadFile(d.log)
		return len(page.Items) == 0 && strings.Contains(string(log), `"triage_rows_dropped":1`), body
	})
	// The snooze is still there: the item stays hidden for its hour.
	_, body := d.do(t, "GET", "/api/attention?include_dismissed=true", "")
	if !strings.Contains(body, `"dismissed":true`) {
		t.Errorf("the snooze went with its log row: %s", body)
	}
	if _, body := d.do(t, "GET", "/api/attention", ""); strings.Contains(body, fp) {
		t.Errorf("the snoozed item is back in the queue: %s", body)
	}
}
