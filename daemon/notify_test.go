package daemon

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"watchdog/config"
	"watchdog/reaper"
)

// fakeSystemd is a real unixgram socket standing in for systemd's notify
// socket (go-systemd's sdnotify_test does the same).
func fakeSystemd(t *testing.T) *net.UnixConn {
	t.Helper()
	// sun_path holds 108 bytes; t.TempDir() can be longer.
	dir, err := os.MkdirTemp("", "wdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

// received reads the datagrams sent so far.
func received(t *testing.T, conn *net.UnixConn) []string {
	t.Helper()
	var out []string
	buf := make([]byte, 4096)
	for {
		if err := conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			return out
		}
		out = append(out, string(buf[:n]))
	}
}

func TestNotifierMessages(t *testing.T) {
	conn := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "2000000") // WatchdogSec=2s
	t.Setenv("WATCHDOG_PID", "")
	n := newNotifier(zap.NewNop())
	if n.interval != time.Second {
		t.Fatalf("ping interval %s, want half of WatchdogSec", n.interval)
	}

	n.watchdog()
	n.watchdog() // too soon after the first: not sent
	n.ready("2 open entities: 1 critical, 0 warning, 1 info")
	n.status("2 open entities: 0 critical, 0 warning, 2 info")
	n.stopping()
	want := []string{
		"WATCHDOG=1",
		"READY=1\nSTATUS=2 open entities: 1 critical, 0 warning, 1 info",
		"STATUS=2 open entities: 0 critical, 0 warning, 2 info",
		"STOPPING=1\nSTATUS=stopping",
	}
	if got := received(t, conn); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent %q\nwant %q", got, want)
	}

	// Once half the interval has passed, the next sweep pings again.
	n.mu.Lock()
	n.lastPing = time.Now().Add(-n.interval / 2)
	n.mu.Unlock()
	n.watchdog()
	if got := received(t, conn); len(got) != 1 || got[0] != "WATCHDOG=1" {
		t.Fatalf("after half an interval: %q", got)
	}
}

func TestNotifierWatchdogOff(t *testing.T) {
	conn := fakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "")
	n := newNotifier(zap.NewNop())
	n.watchdog()
	n.ready("ok")
	if got := received(t, conn); len(got) != 1 || !strings.HasPrefix(got[0], "READY=1") {
		t.Fatalf("with the watchdog off only READY is sent, got %q", got)
	}
}

// TestWatchdogFedByHealthNotBySweeps: the ping depends on the store
// watch and on no sweep being stuck, not on a sweep having finished, so a
// one-minute sweep schedule (the default) never starves systemd's
// watchdog, while an unwritable store or a wedged sweep still stops it.
func TestWatchdogFedByHealthNotBySweeps(t *testing.T) {
	now := time.Now()
	budget := time.Minute
	tests := []struct {
		name      string
		storeErr  error
		checked   time.Time
		sweepFrom time.Time
		ping      bool
		// checking is when the running store check began (zero: none).
		checking time.Time
	}{
		{"healthy, no sweep for long", nil, now, time.Time{}, true, time.Time{}},
		{"a sweep within its budget", nil, now, now.Add(-budget / 2), true, time.Time{}},
		{"a sweep out of budget but not wedged", nil, now, now.Add(-budget - sweepWedgedAfter/2), true, time.Time{}},
		{"a wedged sweep", nil, now, now.Add(-budget - sweepWedgedAfter - time.Second), false, time.Time{}},
		{"store cannot be written", errors.New("disk I/O error"), now, time.Time{}, false, time.Time{}},
		{"store check running, not yet stuck", nil, now, time.Time{}, true, now.Add(-storeCheckStale / 2)},
		{"store check stuck", nil, now, time.Time{}, false, now.Add(-storeCheckStale - time.Second)},
		{"store never checked", nil, time.Time{}, time.Time{}, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := fakeSystemd(t)
			cfg := config.Default()
			rp := &reaper.Reaper{Settings: ReaperSettings(cfg)}
			rp.Settings.SweepBudget = budget
			d := &daemon{cfg: cfg, log: zap.NewNop(), rp: rp, notify: &notifier{log: zap.NewNop(), interval: 45 * time.Second},
				storeErr: tt.storeErr, storeChecked: tt.checked, sweepStart: tt.sweepFrom, checkStart: tt.checking}
			if why := d.unhealthy(now); (why == "") != tt.ping {
				t.Errorf("unhealthy = %q, want ping %v", why, tt.ping)
			}
			d.feedWatchdog()
			got := received(t, conn)
			if sent := len(got) == 1 && got[0] == "WATCHDOG=1"; sent != tt.ping {
				t.Errorf("sent %q, want a ping: %v", got, tt.ping)
			}
		})
	}
}
