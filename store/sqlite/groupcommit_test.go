package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"watchdog/store"
)

var errRefused = errors.New("refused by the decider")

// endRunning is a decider that moves a running entity to "to" and refuses
// anything else, as the write path's would.
func endRunning(to string) store.Decider {
	return func(cur store.Entity) (store.Change, error) {
		if cur.LifecycleOr("") != "running" {
			return store.Change{}, fmt.Errorf("%s is %s: %w", cur.ID, cur.LifecycleOr("none"), errRefused)
		}
		return store.Change{To: to, Terminal: true, Actor: "orchestrator", At: unixAt(2)}, nil
	}
}

// TestGroupCommitMembersFailAlone queues one group of writes whose members
// fail in every way a member can (a refusal, a missing entity, writes then
// an error, a trigger's RAISE, a panic, a caller gone) between members
// that succeed (transitions and a registration), and checks that the group was one commit, that each member
// got its own answer, and that only the successes left rows.
func TestGroupCommitMembersFailAlone(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, id := range []string{"ok1", "ok2", "ok3", "refused", "partial", "unaudited", "panics", "gone"} {
		lifecycle := "running"
		if id == "refused" {
			lifecycle = "completed"
		}
		if _, err := s.Register(ctx, store.Entity{Type: "session", ID: id, Lifecycle: strp(lifecycle)}, "orchestrator", unixAt(1)); err != nil {
			t.Fatal(err)
		}
	}
	transition := func(id, to string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, _, err := s.ApplyTransition(ctx, "session", id, endRunning(to))
			return err
		}
	}
	raw := func(id string, run func(context.Context, *sql.Tx) error) func(context.Context) error {
		return func(ctx context.Context) error { return s.groupWrite(ctx, "test "+id, run) }
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	members := []struct {
		name string
		ctx  context.Context
		do   func(context.Context) error
		// want is nil for a success, else the error it must wrap (or a
		// text it must contain, for errors no sentinel names).
		want     error
		wantText string
		// rows is the number of audit rows the entity must end with
		// (its registration's, plus one if the member committed).
		entity string
		rows   int
	}{
		{name: "first success", do: transition("ok1", "completed"), entity: "ok1", rows: 2},
		{name: "decider refuses", do: transition("refused", "failed"), want: errRefused, entity: "refused", rows: 1},
		{name: "no such entity", do: transition("missing", "completed"), want: store.ErrNotFound},
		{name: "writes, then fails", do: raw("partial", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := s.insertAudit(ctx, tx, store.AuditRow{EntityType: "session", EntityID: "partial", From: strp("running"), To: "completed", Actor: "orchestrator", At: unixAt(2)}); err != nil {
				return err
			}
			return errRefused
		}), want: errRefused, entity: "partial", rows: 1},
		{name: "trigger refuses", do: raw("unaudited", func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE entities SET lifecycle = 'completed' WHERE type = 'session' AND id = 'unaudited'`)
			return err
		}), wantText: "lifecycle change without its audit row", entity: "unaudited", rows: 1},
		{name: "second success", do: transition("ok2", "aborted"), entity: "ok2", rows: 2},
		{name: "panics", do: raw("panics", func(ctx context.Context, tx *sql.Tx) error {
			if _, err := s.insertAudit(ctx, tx, store.AuditRow{EntityType: "session", EntityID: "panics", From: strp("running"), To: "completed", Actor: "orchestrator", At: unixAt(2)}); err != nil {
				return err
			}
			panic("a bug in a decider")
		}), wantText: "panic: a bug in a decider", entity: "panics", rows: 1},
		{name: "caller gone", ctx: gone, do: transition("gone", "completed"), want: context.Canceled, entity: "gone", rows: 1},
		{name: "registration", do: func(ctx context.Context) error {
			created, err := s.Register(ctx, store.Entity{Type: "session", ID: "fresh", Lifecycle: strp("running")}, "orchestrator", unixAt(2))
			if err == nil && !created {
				err = errors.New("registered an entity that existed")
			}
			return err
		}, entity: "fresh", rows: 1},
		{name: "last success", do: transition("ok3", "completed"), entity: "ok3", rows: 2},
	}

	// Hold the write lock so that every member queues behind the first
	// (the leader, waiting for the lock): released, they are one group.
	s.writeMu.Lock()
	groups := s.group.groups
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := m.ctx
			if c == nil {
				c = ctx
			}
			errs[i] = m.do(c)
		}()
	}
	// (testenv.Eventually would import this package: a plain poll.)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		s.group.mu.Lock()
		queued := len(s.group.queue)
		s.group.mu.Unlock()
		if queued == len(members) {
			break
		}
		if time.Now().After(deadline) {
			s.writeMu.Unlock()
			t.Fatalf("waited 60s for %d members to queue; %d did", len(members), queued)
		}
	}
	s.writeMu.Unlock()
	wg.Wait()

	if n := s.group.groups - groups; n != 1 {
		t.Errorf("%d commits, want the %d members in one", n, len(members))
	}
	for i, m := range members {
		err := errs[i]
		switch {
		case m.want == nil && m.wantText == "":
			if err != nil {
				t.Errorf("%s: %v, want success", m.name, err)
			}
		case m.want != nil && !errors.Is(err, m.want):
			t.Errorf("%s: %v, want %v", m.name, err, m.want)
		case m.wantText != "" && (err == nil || !strings.Contains(err.Error(), m.wantText)):
			t.Errorf("%s: %v, want an error saying %q", m.name, err, m.wantText)
		}
		if m.entity == "" {
			continue
		}
		rows, total, err := s.LatestTransitions(ctx, "session", m.entity, 10)
		if err != nil {
			t.Fatal(err)
		}
		if total != m.rows {
			t.Errorf("%s: %s has %d audit rows %+v, want %d", m.name, m.entity, total, rows, m.rows)
		}
		e, err := s.Get(ctx, "session", m.entity)
		if err != nil {
			t.Fatal(err)
		}
		if last := rows[len(rows)-1]; e.LastSeq != last.Seq || e.LifecycleOr("") != last.To {
			t.Errorf("%s: %s is %s at seq %d, its last audit row is %s at seq %d", m.name, m.entity, e.LifecycleOr("none"), e.LastSeq, last.To, last.Seq)
		}
	}
}

// TestGroupCommitLoneWriteCommitsAlone: a write with nobody queued is a
// group of one, committed at once (no waiting for company), and its
// failure is its own transaction's.
func TestGroupCommitLoneWriteCommitsAlone(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if _, err := s.Register(ctx, store.Entity{Type: "session", ID: "s1", Lifecycle: strp("running")}, "orchestrator", unixAt(1)); err != nil {
		t.Fatal(err)
	}
	groups, members := s.group.groups, s.group.members
	if _, _, err := s.ApplyTransition(ctx, "session", "s1", endRunning("completed")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ApplyTransition(ctx, "session", "s1", endRunning("failed")); !errors.Is(err, errRefused) {
		t.Errorf("second transition: %v, want %v", err, errRefused)
	}
	if g, m := s.group.groups-groups, s.group.members-members; g != 2 || m != 2 {
		t.Errorf("%d groups of %d writes, want 2 of 1", g, m)
	}
	if _, total, err := s.LatestTransitions(ctx, "session", "s1", 10); err != nil || total != 2 {
		t.Errorf("%d audit rows (%v), want 2", total, err)
	}
}
