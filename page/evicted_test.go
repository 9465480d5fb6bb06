package page

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// TestEvictedPageAgrees: the page served by a daemon whose view dropped
// the ended entities that aged out of the failure window (ADR-0060) is
// the page a daemon that kept them serves, byte for byte: the queue, the
// table page after page whatever the filter and order, the host menu,
// the legacy count, and each entity's own page, aged out or not.
func TestEvictedPageAgrees(t *testing.T) {
	e := newEnv(t, "")
	ctx := context.Background()
	running := "running"
	ids := map[string]string{}
	add := func(i int) {
		host := fmt.Sprintf("h%d", i%3)
		typ := []string{"session", "invocation"}[i%2]
		id := fmt.Sprintf("e-%03d", i)
		ids[id] = typ
		reg := transitions.Registration{Entity: store.Entity{Type: typ, ID: id, Label: fmt.Sprintf("job %d", i), HostID: host},
			Actor: transitions.ActorOrchestrator}
		if i%17 == 0 {
			reg.Legacy = true
		} else {
			reg.Entity.Lifecycle = &running
		}
		if _, err := e.w.Register(ctx, reg); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		switch {
		case i%17 == 0:
		case i%5 == 1:
			e.move(typ, id, "failed", state.RunFailedExitNonzero, "exit 3")
		case i%5 == 3:
			e.move(typ, id, map[string]string{"session": "completed", "invocation": "succeeded"}[typ], "", "")
		case i%5 == 2:
			e.observe(typ, id, state.HealthStalled, state.RunHealthStalled)
		}
	}
	for i := range 100 {
		add(i)
	}
	// A day and more later: the first hundred's ended ones aged out.
	e.clock.Advance(25 * time.Hour)
	for i := 100; i < 150; i++ {
		add(i)
	}
	kept := live.New(e.st, e.clock.Now, 0)
	dropped := live.New(e.st, e.clock.Now, 0)
	dropped.EvictAgedOut()
	for _, v := range []*live.View{kept, dropped} {
		if err := v.Load(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if dropped.Len() >= kept.Len()-20 || dropped.Complete("", true) {
		t.Fatalf("the view that drops holds %d of %d entities (complete %v): too few dropped to tell", dropped.Len(), kept.Len(), dropped.Complete("", true))
	}
	serve := func(v *live.View) *env {
		pg := New(Options{View: v, Store: e.st, Now: e.clock.Now})
		srv := httptest.NewServer(api.New(api.Options{Store: e.st, Writer: e.w, Now: e.clock.Now, View: v, Page: pg}))
		t.Cleanup(srv.Close)
		return &env{t: t, st: e.st, w: e.w, view: v, clock: e.clock, srv: srv}
	}
	want, got := serve(kept), serve(dropped)
	for _, path := range []string{"/", "/?severity=critical,warning", "/?severity=neutral", "/?order=id", "/?type=session", "/?host=h1", "/?host=h2&order=id"} {
		pages := 0
		for p := path; p != ""; pages++ {
			w, g := want.page(p), got.page(p)
			if g != w || count(w, "<tr") < 2 {
				t.Fatalf("GET %s: the page of the view that drops differs from the one that keeps (or is empty):\n%s\n----\n%s", p, g, w)
			}
			p = nextLink(w)
			if pages > 20 {
				t.Fatalf("GET %s: the walk does not end", path)
			}
		}
		if path == "/" && pages < 2 {
			t.Errorf("GET /: %d pages, want a walk of several", pages)
		}
	}
	for id, typ := range ids {
		p := "/entities/" + typ + "/" + id
		if w, g := want.page(p), got.page(p); g != w {
			t.Fatalf("GET %s differs:\n%s\n----\n%s", p, g, w)
		}
	}

	// Stale rows whose columns cannot be written back (another writer
	// holds the file's write lock past the store's busy timeout): the
	// table is read from a view of the store, the same page, not a 500.
	db := testenv.SQL(t, e.st.Path())
	if _, err := db.ExecContext(ctx, "UPDATE entities SET derived_rev = NULL"); err != nil {
		t.Fatal(err)
	}
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer lock.ExecContext(context.Background(), "ROLLBACK")
	if w, g := want.page("/"), got.page("/"); g != w {
		t.Fatalf("GET / with stale rows that cannot be written back differs:\n%s\n----\n%s", g, w)
	}
}
