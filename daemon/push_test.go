package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"watchdog/config"
	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/reaper"
	"watchdog/store/sqlite"
)

// TestReloadPush: a reload that sets alertmanager.urls starts a pusher
// (it reaches the Alertmanager), one that changes nothing keeps it, one
// that empties the urls stops it.
func TestReloadPush(t *testing.T) {
	var requests atomic.Int64
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte("[]")) //nolint:errcheck // a test server
	}))
	defer am.Close()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := &daemon{cfg: config.Default(), st: st, view: live.New(st, nil, 0), log: zap.NewNop(), rp: &reaper.Reaper{HostID: "h"}}
	defer d.stopPush()

	d.reloadPush()
	if d.push != nil {
		t.Fatal("a pusher runs without alertmanager.urls")
	}
	on := *d.cfg
	on.Alertmanager.URLs = []string{am.URL}
	d.cfg = &on
	d.reloadPush()
	first := d.push
	if first == nil {
		t.Fatal("setting alertmanager.urls started no pusher")
	}
	testenv.Eventually(t, "the pusher's first request", time.Minute, func() (bool, string) {
		return requests.Load() > 0, "no request yet"
	})
	same := on
	d.cfg = &same
	d.reloadPush()
	if d.push != first {
		t.Error("a reload that left the section alone replaced the pusher")
	}
	off := on
	off.Alertmanager.URLs = nil
	d.cfg = &off
	d.reloadPush()
	if d.push != nil {
		t.Error("emptying alertmanager.urls left the pusher running")
	}
}
