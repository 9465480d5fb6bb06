package page

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestFleetPageAgreesWithTheView: the page of every host served by a
// daemon that holds one host (its queue, table, host menu and legacy
// count read by index, ADR-0058) is the page a daemon holding every host
// serves from its view, byte for byte, page after page, whatever the
// filter and order.
func TestFleetPageAgreesWithTheView(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	running := "running"
	for i := range 130 {
		host := fmt.Sprintf("h%d", i%3)
		if i%13 == 0 {
			host = ""
		}
		reg := transitions.Registration{Entity: store.Entity{Type: []string{"session", "invocation"}[i%2], ID: fmt.Sprintf("e-%03d", i),
			Label: fmt.Sprintf("job %d", i), HostID: host}, Actor: transitions.ActorOrchestrator}
		if i%17 == 0 {
			reg.Legacy = true
		} else {
			reg.Entity.Lifecycle = &running
		}
		if _, err := e.w.Register(ctx, reg); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(1e9)
		switch {
		case i%17 == 0:
		case i%5 == 1:
			e.move(reg.Entity.Type, reg.Entity.ID, "failed", state.RunFailedExitNonzero, "exit 3")
		case i%5 == 2:
			e.observe(reg.Entity.Type, reg.Entity.ID, state.HealthStalled, state.RunHealthStalled)
		}
	}
	one := live.New(e.st, e.clock.Now, 0)
	one.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := one.Load(ctx); err != nil {
		t.Fatal(err)
	}
	pg := New(Options{View: one, Store: e.st, Now: e.clock.Now})
	srv := httptest.NewServer(api.New(api.Options{Store: e.st, Writer: e.w, Now: e.clock.Now, View: one, Page: pg}))
	t.Cleanup(srv.Close)
	fleet := &env{t: t, st: e.st, w: e.w, view: one, clock: e.clock, srv: srv}

	for _, path := range []string{"/", "/?severity=critical,warning", "/?order=id", "/?type=session", "/?host=h1", "/?host=h2&order=id"} {
		pages := 0
		for p := path; p != ""; pages++ {
			// The body's data-poll differs by design (TestFleetPagePolls).
			poll := fmt.Sprintf(`data-poll="%d"`, FleetPoll/time.Millisecond)
			want, got := e.page(p), strings.Replace(fleet.page(p), poll, `data-poll="0"`, 1)
			if got != want || count(want, "<tr") < 2 {
				t.Fatalf("GET %s: the page by index differs from the view's (or is empty):\n%s\n----\n%s", p, got, want)
			}
			p = nextLink(want)
			if pages > 10 {
				t.Fatalf("GET %s: the walk does not end", path)
			}
		}
		if path == "/" && pages < 2 {
			t.Errorf("GET /: %d pages, want a walk of several", pages)
		}
	}
}

// TestFleetPagePolls: a page served by a daemon whose view holds one host
// asks the script to re-fetch on a clock (its stream tells that host's
// changes only); a lone daemon's page does not.
func TestFleetPagePolls(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	one := live.New(e.st, e.clock.Now, 0)
	one.SetHosts(func() store.Hosts { return store.Only("h0") })
	if err := one.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		view *live.View
		want string
	}{
		{"lone", e.view, `data-poll="0"`},
		{"one host of a fleet", one, fmt.Sprintf(`data-poll="%d"`, FleetPoll/time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := New(Options{View: tc.view, Store: e.st, Now: e.clock.Now})
			srv := httptest.NewServer(api.New(api.Options{Store: e.st, Writer: e.w, Now: e.clock.Now, View: tc.view, Page: pg}))
			defer srv.Close()
			for _, path := range []string{"/", "/runbook"} {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), tc.want) {
					t.Errorf("GET %s: the body lacks %s", path, tc.want)
				}
			}
		})
	}
}
