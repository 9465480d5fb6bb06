package transitions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"watchdog/store"
)

// uids is a PIDChecker of pids to owners (the real one, reaper.PIDGuard,
// is tested on real processes there and end to end); pid 1 is refused.
type uids map[int]int

func (u uids) CheckPID(pid int, _ uint64) (int, error) {
	if pid == 1 {
		return 0, ErrPIDRefused
	}
	uid, ok := u[pid]
	if !ok {
		return 0, ErrPIDGone
	}
	return uid, nil
}

// TestPrincipalRights: who may register which pid, and act on which
// entity, by the door's principal; a refusal stores nothing, and the
// owner and the audit rows name who wrote.
func TestPrincipalRights(t *testing.T) {
	alice := PeerPrincipal(1000, "alice")
	root := PeerPrincipal(0, "root")
	ci := Principal{Name: "token:ci", UIDs: []int{1000}}
	admin := Principal{Name: "token:admin"}
	pids := uids{4000: 1000, 4001: 1001, 4002: 0}
	for _, tc := range []struct {
		name    string
		by      Principal
		pid     int
		want    error
		owner   int
		ownerOK bool
	}{
		{"alice, her pid", alice, 4000, nil, 1000, true},
		{"alice, bob's pid", alice, 4001, ErrForbidden, 0, false},
		{"alice, root's pid", alice, 4002, ErrForbidden, 0, false},
		{"alice, a gone pid", alice, 4999, ErrPIDRefused, 0, false},
		{"alice, no pid", alice, 0, nil, 1000, true},
		{"root, bob's pid: bob's", root, 4001, nil, 1001, true},
		{"root, no pid", root, 0, nil, 0, true},
		{"anyone, pid 1", root, 1, ErrPIDRefused, 0, false},
		{"a token for alice, her pid", ci, 4000, nil, 1000, true},
		{"a token for alice, bob's pid", ci, 4001, ErrForbidden, 0, false},
		{"a token for alice, no pid", ci, 0, nil, 1000, true},
		{"a token without uids, bob's pid", admin, 4001, nil, 0, false},
		{"the admin token, pid 1", admin, 1, ErrPIDRefused, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := openTestStore(t)
			w := &Writer{Store: st, PIDs: pids}
			ctx := context.Background()
			_, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: "s", PID: tc.pid}, Actor: ActorOrchestrator, Principal: tc.by})
			if !errors.Is(err, tc.want) {
				t.Fatalf("register: %v, want %v", err, tc.want)
			}
			e, gerr := st.Get(ctx, "session", "s")
			if tc.want != nil {
				if !errors.Is(gerr, store.ErrNotFound) {
					t.Errorf("a refused registration stored %+v", e)
				}
				return
			}
			if e.Owner != tc.by.Name || e.HasOwnerUID != tc.ownerOK || (tc.ownerOK && e.OwnerUID != tc.owner) {
				t.Errorf("owner %q uid %d (%t), want %q uid %d (%t)", e.Owner, e.OwnerUID, e.HasOwnerUID, tc.by.Name, tc.owner, tc.ownerOK)
			}
			rows, _ := st.Transitions(ctx, "session", "s")
			if len(rows) != 1 || rows[0].Principal != tc.by.Name {
				t.Errorf("registration row %+v, want principal %q", rows, tc.by.Name)
			}
		})
	}
}

// TestPrincipalActsOnlyOnItsOwn: a transition or re-registration of an
// entity another uid owns is 403 and changes nothing; the owner's, root's
// and the admin token's pass, and the audit row names each.
func TestPrincipalActsOnlyOnItsOwn(t *testing.T) {
	st, _ := openTestStore(t)
	w := &Writer{Store: st, PIDs: uids{4000: 1000}}
	ctx := context.Background()
	alice, bob := PeerPrincipal(1000, "alice"), PeerPrincipal(1001, "bob")
	running := "running"
	for _, id := range []string{"a", "b", "c"} {
		if _, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: id, PID: 4000, Lifecycle: &running}, Actor: ActorOrchestrator, Principal: alice}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Register(ctx, Registration{Entity: store.Entity{Type: "session", ID: "a", Label: "mine now"}, Actor: ActorOrchestrator, Principal: bob}); !errors.Is(err, ErrForbidden) {
		t.Errorf("bob re-registers alice's: %v", err)
	}
	if _, err := w.Transition(ctx, Request{Type: "session", ID: "a", To: "completed", Actor: ActorOrchestrator, Principal: bob}); !errors.Is(err, ErrForbidden) {
		t.Errorf("bob ends alice's: %v", err)
	}
	if e, _ := st.Get(ctx, "session", "a"); e.LifecycleOr("") != "running" || e.Label != "" {
		t.Errorf("a refused write changed %+v", e)
	}
	for id, p := range map[string]Principal{"a": alice, "b": PeerPrincipal(0, "root"), "c": {Name: "token:admin"}} {
		if _, err := w.Transition(ctx, Request{Type: "session", ID: id, To: "completed", Actor: ActorOrchestrator, Principal: p}); err != nil {
			t.Errorf("%s ends %s: %v", p.Name, id, err)
			continue
		}
		rows, _ := st.Transitions(ctx, "session", id)
		if got := rows[len(rows)-1].Principal; got != p.Name {
			t.Errorf("%s's end is audited as %q", p.Name, got)
		}
	}
}

// TestTextAndParentsRefused: a label or a progress note with a control
// character or invalid UTF-8, and an entity naming itself its parent, are
// refused whole (issue 37); a plain label passes.
func TestTextAndParentsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"plain", "reviewer for PR 1064 — ✓", true},
		{"a real U+FFFD", "odd \uFFFD sign", true},
		{"ESC", "red \x1b[31m", false},
		{"BEL", "ding \a", false},
		{"OSC", "\x1b]8;;http://evil\x1b\\", false},
		{"newline", "two\nlines", false},
		{"DEL", "x\x7f", false},
		{"C1", "x\u0085", false},
		{"invalid UTF-8", "x\xffy", false},
	} {
		if err := CheckText("label", tc.text); (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidInput)) {
			t.Errorf("%s: %v, want ok=%t", tc.name, err, tc.ok)
		}
	}
	st, _ := openTestStore(t)
	w := &Writer{Store: st}
	ctx := context.Background()
	for _, e := range []store.Entity{
		{Type: "session", ID: "esc", Label: "\x1b]0;pwned\a"},
		{Type: "play", ID: "p", ParentType: "play", ParentID: "p"},
	} {
		if _, err := w.Register(ctx, Registration{Entity: e, Actor: ActorOrchestrator}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("register %s/%s: %v, want invalid input", e.Type, e.ID, err)
		}
		if _, err := st.Get(ctx, e.Type, e.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s/%s was stored", e.Type, e.ID)
		}
	}
}

// TestActorFor: every actor, claimed and as the default, by each door's
// callers: root by the kernel and a token with the admin scope have the
// admin right, another uid and a scoped token do not. A claim beats the
// default.
func TestActorFor(t *testing.T) {
	const no = "403" // refused, ErrForbidden
	// What each actor comes to: claimed or as the default, with the admin right and without.
	type rule struct {
		actor                            string
		claimed, claimedNo, dflt, dfltNo string
	}
	rules := []rule{
		{"", ActorOrchestrator, ActorOrchestrator, ActorOrchestrator, ActorOrchestrator},
		{ActorOrchestrator, ActorOrchestrator, ActorOrchestrator, ActorOrchestrator, ActorOrchestrator},
		{ActorAdmin, ActorAdmin, no, ActorAdmin, ActorOrchestrator},
		{ActorReaper, no, no, no, no},
		{ActorExec, ActorExec, ActorExec, ActorExec, ActorExec},
		{"root", "root", "root", "root", "root"}, // the write path's to refuse
	}
	callers := []struct {
		name  string
		p     Principal
		admin bool
	}{
		{"root", PeerPrincipal(0, "root"), true},
		{"non-root", PeerPrincipal(1000, "alice"), false},
		{"admin scope", Principal{Name: "token:ops"}, true},
		{"no admin scope", Principal{Name: "token:ci", UIDs: []int{1000}}, false},
	}
	for _, a := range Actors {
		if !slices.ContainsFunc(rules, func(r rule) bool { return r.actor == a }) {
			t.Errorf("actor %s has no rule here", a)
		}
	}
	for _, r := range rules {
		for _, c := range callers {
			for _, how := range []string{"claimed", "default"} {
				claimed, dflt, want := r.actor, "", r.claimed // the API's door has no default
				if !c.admin {
					want = r.claimedNo
				}
				if how == "default" {
					claimed, dflt, want = "", r.actor, r.dflt
					if !c.admin {
						want = r.dfltNo
					}
				}
				got, err := ActorFor(claimed, dflt, c.p, c.admin)
				switch {
				case want == no && (!errors.Is(err, ErrForbidden) || Cause(err) != CauseForbidden || got != ""):
					t.Errorf("%s %q by %s: %q, %v; want ErrForbidden", how, r.actor, c.name, got, err)
				case want == no && r.actor == ActorAdmin && !strings.Contains(err.Error(), c.p.Name):
					t.Errorf("%s admin by %s: %v does not name the caller", how, c.name, err)
				case want != no && (err != nil || got != want):
					t.Errorf("%s %q by %s: %q, %v; want %q", how, r.actor, c.name, got, err, want)
				}
			}
		}
	}
	if got, err := ActorFor(ActorOrchestrator, ActorAdmin, PeerPrincipal(0, "root"), true); got != ActorOrchestrator || err != nil {
		t.Errorf("orchestrator claimed over the default admin: %q, %v", got, err)
	}
}
