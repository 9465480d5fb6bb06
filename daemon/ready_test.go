package daemon

import (
	"context"
	"database/sql"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/store/sqlite"
)

// ceiling is the generous wait for what a daemon started by a test does
// on its own time (a notification, a log line, a shutdown): a loaded
// machine only makes it slower.
const ceiling = 2 * time.Minute

// waitDatagram reads notifications until one contains want, or fails the
// test after deadline; it returns everything read.
func waitDatagram(t *testing.T, conn *net.UnixConn, want string, deadline time.Duration) []string {
	t.Helper()
	var got []string
	buf := make([]byte, 4096)
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			continue
		}
		got = append(got, string(buf[:n]))
		if strings.Contains(string(buf[:n]), want) {
			return got
		}
	}
	t.Fatalf("no %q within %s; received %q", want, deadline, got)
	return nil
}

func readyz(t *testing.T, addr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReadyOnlyAfterASuccessfulFirstSweep: a first sweep that fails (here
// its table is missing) holds READY back; STATUS= says why; the sweep is
// retried, and READY follows the first one that succeeds.
func TestReadyOnlyAfterASuccessfulFirstSweep(t *testing.T) {
	defer func(d time.Duration) { firstSweepRetry = d }(firstSweepRetry)
	firstSweepRetry = 50 * time.Millisecond

	db := filepath.Join(t.TempDir(), "w.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	h, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Exec("ALTER TABLE entities RENAME TO entities_hidden"); err != nil {
		t.Fatal(err)
	}

	conn := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "")
	cfg := config.Default()
	cfg.Store.DSN = db
	cfg.Listen = "127.0.0.1:0"
	// Nothing scheduled runs during the test: only the start-up retries.
	cfg.Jobs = config.Jobs{Sweep: "@every 1h", EnforceTerminal: "@every 1h", ReapPhantoms: "@every 1h", CheckSchedules: "@every 1h", Vacuum: "@every 1h"}
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Config: cfg, Log: zap.New(core), Version: "test"})
	}()
	defer func() {
		cancel()
		<-done
	}()
	a := boundAddr(t, logs)

	got := waitDatagram(t, conn, "first sweep failed", ceiling)
	if last := got[len(got)-1]; !strings.HasPrefix(last, "STATUS=starting: the first sweep failed") || !strings.Contains(last, "no such table") {
		t.Errorf("STATUS does not say why READY waits: %q", last)
	}
	// A second failed attempt: still no READY.
	got = append(got, waitDatagram(t, conn, "first sweep failed", ceiling)...)
	for _, m := range got {
		if strings.Contains(m, "READY=1") {
			t.Fatalf("READY sent after a failed first sweep: %q", got)
		}
	}
	if code, body := readyz(t, a); code != http.StatusServiceUnavailable || !strings.Contains(body, "no sweep has completed yet") {
		t.Errorf("/readyz before the first sweep: %d %q", code, body)
	}

	if _, err := h.Exec("ALTER TABLE entities_hidden RENAME TO entities"); err != nil {
		t.Fatal(err)
	}
	waitDatagram(t, conn, "READY=1", ceiling)
	if code, body := readyz(t, a); code != http.StatusOK {
		t.Errorf("/readyz after READY: %d %q", code, body)
	}
	if n := logs.FilterMessage("first sweep failed; READY waits for one that succeeds").Len(); n < 2 {
		t.Errorf("%d retry warnings, want one per failed attempt", n)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after a shutdown: %v", err)
	}
	done <- nil // for the deferred wait
}

// TestShutdownBeforeFirstSweepSucceeds: SIGTERM while READY waits ends
// the wait and the daemon, cleanly, without READY.
func TestShutdownBeforeFirstSweepSucceeds(t *testing.T) {
	defer func(d time.Duration) { firstSweepRetry = d }(firstSweepRetry)
	firstSweepRetry = time.Hour

	db := filepath.Join(t.TempDir(), "w.db")
	st, err := sqlite.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.SQL(t, st.Path()).Exec("ALTER TABLE entities RENAME TO entities_hidden"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	conn := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "")
	cfg := config.Default()
	cfg.Store.DSN = db
	cfg.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Config: cfg, Log: zap.NewNop(), Version: "test"}) }()
	waitDatagram(t, conn, "first sweep failed", ceiling)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(ceiling):
		t.Fatalf("shutdown did not end the wait for a first sweep within %s", ceiling)
	}
	for _, m := range received(t, conn) {
		if strings.Contains(m, "READY=1") {
			t.Errorf("READY sent: %q", m)
		}
	}
}

// boundAddr waits for the daemon's "listening" log line and returns the
// address it bound (the test listens on :0).
func boundAddr(t *testing.T, logs *observer.ObservedLogs) string {
	t.Helper()
	var addr string
	testenv.Eventually(t, "the daemon to log its address", ceiling, func() (bool, string) {
		if l := logs.FilterMessage("listening").All(); len(l) > 0 {
			addr = l[0].ContextMap()["addr"].(string)
			return true, ""
		}
		return false, "no \"listening\" line"
	})
	return addr
}
