package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"watchdog/internal/testenv"
)

// pgStart starts `watchdog serve` on the PostgreSQL database dsn as host
// hostID, and waits until it is ready.
func pgStart(t *testing.T, dsn, hostID string) *rmtDaemon {
	t.Helper()
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf(`host_id: %s
store:
  driver: postgres
  dsn: %q
listen: 127.0.0.1:0
auth: none
log:
  level: info
  format: json
`, hostID, dsn))
	d, _ := rmtServe(t, cfg, filepath.Join(dir, "serve.log"))
	return d
}

// TestPostgresStoreSharedByDaemonsAndCLI: two daemons of two hosts serve
// one PostgreSQL database at once (no one-daemon lock there); what one
// registers, the CLI moves with --db postgres://…, and the other daemon's
// live view shows it, woken by the store's change notifications.
func TestPostgresStoreSharedByDaemonsAndCLI(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, b := pgStart(t, dsn, "host-a"), pgStart(t, dsn, "host-b")
	a.register(t, `{"type":"session","id":"pg-1","lifecycle":"running"}`)
	testenv.Eventually(t, "host-b sees host-a's registration", rmtDeadline, func() (bool, string) {
		code, e := b.entity(t, "session", "pg-1")
		return code == http.StatusOK && e.Lifecycle != nil && *e.Lifecycle == "running", fmt.Sprintf("%d %+v", code, e)
	})
	r := rmtRun(t, t.TempDir(), nil, "", "transition", "session/pg-1", "cancelled", "--reason", "run.cancelled.operator", "--db", dsn)
	if r.code != 0 {
		t.Fatalf("transition --db postgres://: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, d := range []*rmtDaemon{a, b} {
		testenv.Eventually(t, "both daemons see the CLI's transition", rmtDeadline, func() (bool, string) {
			code, e := d.entity(t, "session", "pg-1")
			return code == http.StatusOK && e.Lifecycle != nil && *e.Lifecycle == "cancelled", fmt.Sprintf("%d %+v", code, e)
		})
	}
}

// TestPostgresRefusesASecondDaemonOfOneHost: what the lock file is on
// SQLite, a session lock per host is on PostgreSQL: a second daemon of a
// host already served is refused at start with one line naming the other
// (and touches nothing), while a daemon of another host is welcome.
func TestPostgresRefusesASecondDaemonOfOneHost(t *testing.T) {
	dsn := testenv.Postgres(t)
	first := pgStart(t, dsn, "host-a")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "config.yaml", fmt.Sprintf("host_id: host-a\nstore:\n  driver: postgres\n  dsn: %q\nlisten: 127.0.0.1:0\nauth: none\n", dsn))
	r := rmtRun(t, dir, nil, "", "serve", "--config", cfg)
	if r.code == 0 || !strings.Contains(r.stderr, `another watchdog daemon of host "host-a" already serves this store`) {
		t.Fatalf("a second daemon of host-a: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n > 1 {
		t.Errorf("the refusal is %d lines, want one:\n%s", n+1, r.stderr)
	}
	pgStart(t, dsn, "host-b")
	if code, _ := first.do(t, "GET", "/readyz", ""); code != http.StatusOK {
		t.Errorf("the first daemon is not ready after the refusal: %d", code)
	}
}
