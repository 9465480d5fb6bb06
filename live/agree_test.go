package live

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

func attentionQuery() attention.Query { return attention.Query{Limit: attention.MaxLimit} }

// seed inserts n entities of every kind the queue and the counts tell
// apart (open and stalled, failed inside and outside the window, ended
// fine, legacy), at times spread over three days before testNow, straight
// through SQL as another writer would.
func seed(t testing.TB, db *sql.DB, r *rand.Rand, from, n int) {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := from; i < from+n; i++ {
		if _, err := tx.Exec(`INSERT INTO entities (type, id, label, lifecycle, terminal, health, delivery,
			reasons, transition_reason, ended_at, lifecycle_at, created_at, updated_at)
			VALUES (?, ?, '', ?, ?, ?, 'not_expected', ?, ?, ?, ?, ?, ?)`, row(r, i)...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

const (
	stalledJSON = `[{"code":"run.health.stalled","message":"no heartbeat for 71m","claim_status":"observed","confidence":1,"evidence":[]}]`
	failedJSON  = `{"code":"run.failed.exit_nonzero","message":"exit 3","claim_status":"observed","confidence":1,"evidence":[]}`
	deadEndJSON = `{"code":"system.health.process_dead_no_terminal","message":"ended","claim_status":"observed","confidence":1,"evidence":[]}`
)

// row is the values of one entity (type, id, lifecycle, terminal, health,
// reasons, transition_reason, ended_at, lifecycle_at, created_at,
// updated_at) drawn from r.
func row(r *rand.Rand, i int) []any {
	now := float64(testNow.Unix())
	ago := func() float64 { return now - float64(r.IntN(3*86400)) } // some outside the window, some inside
	typ := []string{"session", "invocation", "subagent", "turn"}[r.IntN(4)]
	var (
		lifecycle  any = "running"
		terminal       = 0
		health         = "running"
		reasons        = "[]"
		transition any
		ended      any
		lcAt       any = ago()
	)
	switch r.IntN(7) {
	case 0:
		health, reasons = "stalled", stalledJSON
	case 1:
		lifecycle, terminal, health, transition, ended = "failed", 1, "ok", failedJSON, ago()
	case 2: // failed with no ended_at: the window reckons from lifecycle_at
		lifecycle, terminal, health, transition = "failed", 1, "ok", failedJSON
	case 3:
		lifecycle, terminal, health, ended = "completed", 1, "ok", ago()
	case 4:
		lifecycle = nil // legacy
	case 5: // ended by the reaper for a death it still holds, dated
		end := ago()
		typ = "session" // the one of these types whose graph has aborted
		lifecycle, terminal, health, transition, ended = "aborted", 1, "process_dead", deadEndJSON, end
		reasons = fmt.Sprintf(`[{"code":"run.health.process_dead","message":"process dead","claim_status":"observed","confidence":1,"evidence":[],"first_seen_at":%v}]`, end-60)
	}
	// Updated times collide now and then, so the fingerprint decides the
	// order of some items.
	updated := now - float64(r.IntN(2000))
	return []any{typ, fmt.Sprintf("e-%05d", i), lifecycle, terminal, health, reasons, transition, ended, lcAt, now - 4*86400, updated}
}

// TestViewAgreesWithStore compares every read of the view with what the
// CLI derives from the store at the same instant (attention.Read, and the
// counts by their definitions over Derive), across the failure window's
// ageing, dismissals of every kind, and changes small (a few entities,
// kept in order one by one) and large (many, merged in one pass).
func TestViewAgreesWithStore(t *testing.T) {
	st, cli := twoStores(t)
	ctx := context.Background()
	db := testenv.SQL(t, cli.Path())
	r := rand.New(rand.NewPCG(13, 1))
	seed(t, db, r, 0, 600)

	v := New(st, func() time.Time { return testNow }, 0)
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	// Dismissals of every kind, on items of the queue as it is now.
	full, err := attention.Read(ctx, st, attention.Query{Limit: attention.MaxLimit, FailureWindow: attention.DefaultFailureWindow}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	if full.Total < 100 {
		t.Fatalf("the fixture's queue has %d items; the comparison needs many", full.Total)
	}
	for i, it := range full.Items[:40] {
		d := store.Dismissal{Fingerprint: it.Fingerprint, EntityType: it.Entity.Type, EntityID: it.Entity.ID,
			ReasonCode: string(it.Reason.Code), StatusAtDismissal: it.Status, DismissedAt: testNow, DismissedBy: "test"}
		switch i % 4 {
		case 0: // permanent
		case 1:
			d.SnoozedUntil = testNow.Add(6 * time.Hour)
		case 2:
			d.SnoozedUntil = testNow.Add(-time.Hour) // expired
		case 3:
			d.ClearOnStatusChange, d.StatusAtDismissal = true, "some_other_status"
		}
		if err := cli.UpsertDismissal(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// Acknowledgements of the deaths the reaper's ends subsume, carried
	// over to the ends' items (attention.Carries) or not.
	carried := 0
	for i, it := range full.Items {
		if it.Reason.Code != state.SystemHealthProcessDeadNoTerminal {
			continue
		}
		e, err := cli.Get(ctx, it.Entity.Type, it.Entity.ID)
		if err != nil || len(e.Reasons) != 1 {
			t.Fatalf("%s: %+v %v", it.Fingerprint, e.Reasons, err)
		}
		d := store.Dismissal{Fingerprint: attention.Fingerprint(it.Entity.Type, it.Entity.ID, state.RunHealthProcessDead), EntityType: it.Entity.Type, EntityID: it.Entity.ID,
			ReasonCode: string(state.RunHealthProcessDead), StatusAtDismissal: "running", DismissedAt: testNow, ClearOnStatusChange: true,
			Occurrence: e.Reasons[0].FirstSeen.Time}
		switch i % 4 {
		case 0: // permanent
		case 1:
			d.SnoozedUntil = testNow.Add(6 * time.Hour)
		case 2:
			d.SnoozedUntil = testNow.Add(-time.Hour) // expired
		case 3:
			d.Occurrence = d.Occurrence.Add(-time.Hour) // another occurrence
		}
		if err := cli.UpsertDismissal(ctx, d); err != nil {
			t.Fatal(err)
		}
		carried++
	}
	if carried < 8 {
		t.Fatalf("the fixture's queue has %d escalated deaths; the comparison needs several", carried)
	}

	compare := func(stage string) {
		t.Helper()
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Duration{0, 3 * time.Hour, 7 * time.Hour, 30 * time.Hour, 80 * time.Hour} {
			now := testNow.Add(at)
			for _, q := range []attention.Query{
				{},
				{Limit: attention.MaxLimit},
				{Limit: 7, Severities: []state.Severity{state.SeverityCritical}},
				{Limit: attention.MaxLimit, Severities: []state.Severity{state.SeverityWarning, state.SeverityInfo}},
				{Limit: attention.MaxLimit, IncludeDismissed: true},
			} {
				q.FailureWindow = attention.DefaultFailureWindow
				want, err := attention.Read(ctx, st, q, now)
				if err != nil {
					t.Fatal(err)
				}
				if got := v.Attention(q, now); jsonOf(t, got) != jsonOf(t, want) {
					t.Errorf("%s, %v later, query %+v: the view's queue differs from the store's:\nview  %.600s\nstore %.600s", stage, at, q, jsonOf(t, got), jsonOf(t, want))
				}
			}
			queue, err := attention.Read(ctx, st, attention.Query{FailureWindow: attention.DefaultFailureWindow}, now)
			if err != nil {
				t.Fatal(err)
			}
			open, inWindow, reasons := 0, 0, map[ReasonKey]int{}
			v.Each("", func(e *Entry) {
				d := Derive(e.Entity, now)
				aged := attention.AgedOut(d.State.Outcome, e.Entity.Health, e.Entity.EndedAt, e.Entity.LifecycleAt, e.Entity.UpdatedAt, now, attention.DefaultFailureWindow)
				if e.Legacy() {
					return
				}
				if !e.Entity.Terminal {
					open++
				}
				if d.State.Outcome != "" && !aged {
					inWindow++
				}
				if !aged {
					for _, c := range d.Codes {
						reasons[ReasonKey{c, state.ReasonSeverity(c, d.State.Severity, !e.Entity.Terminal), e.Entity.HostID}]++
					}
				}
			})
			c := v.Counts(now)
			if c.Open != open || c.InWindow != inWindow || c.Queue != queue.Total || fmt.Sprint(c.QueueBySeverity) != fmt.Sprint(queue.BySeverity) {
				t.Errorf("%s, %v later: counts open %d, in window %d, queue %d %v; by definition %d, %d, %d %v",
					stage, at, c.Open, c.InWindow, c.Queue, c.QueueBySeverity, open, inWindow, queue.Total, queue.BySeverity)
			}
			if got := v.QueueBySeverity(now); fmt.Sprint(got) != fmt.Sprint(queue.BySeverity) {
				t.Errorf("%s, %v later: QueueBySeverity %v, queue %v", stage, at, got, queue.BySeverity)
			}
			if got := v.ActiveReasons(now); fmt.Sprint(got) != fmt.Sprint(reasons) {
				t.Errorf("%s, %v later: ActiveReasons %v, by definition %v", stage, at, got, reasons)
			}
		}
	}
	compare("loaded")
	// Repacked (compact.go): the same reads, from records in slabs; a
	// Ref taken before still rebuilds its entity as it was.
	var before Ref
	var beforeEntity store.Entity
	v.Each("", func(e *Entry) {
		if e.Entity.ID == "e-00097" {
			before, beforeEntity = e.Ref(), e.Entity
		}
	})
	defer func(n int) { compactChunk = n }(compactChunk)
	compactChunk = 7 // many chunks, each slab across several
	repack := func(stage string) {
		t.Helper()
		n := v.Len()
		if moved := v.compact(0); moved != n {
			t.Fatalf("%s: compact moved %d of %d records", stage, moved, n)
		}
		if moved := v.compact(0); moved != 0 {
			t.Errorf("%s: a second compact with nothing made since moved %d", stage, moved)
		}
		pages := map[uintptr]bool{}
		v.mu.RLock()
		for r := range v.entries.All() {
			pages[uintptr(unsafe.Pointer(r))&^8191] = true
		}
		v.mu.RUnlock()
		// Full slabs fill a page each; the last, smaller one may straddle
		// two (a size class of several pages).
		if most := n/slabRecords + 2; len(pages) > most {
			t.Errorf("%s: %d records on %d pages after compact, want at most %d", stage, n, len(pages), most)
		}
		// Every ref of the index is to the record the view holds: none
		// keeps an original alive.
		v.mu.RLock()
		held := func(what string, r *record) {
			if cur := v.entries.Get(r.typ(), r.id); cur != r {
				t.Errorf("%s: the index's %s refers to %s/%s's record from before the compaction", stage, what, r.typ(), r.id)
			}
		}
		for _, q := range v.idx.queue {
			held("queue", q.e)
		}
		for _, m := range [...]map[string]itemRef{v.idx.byFP, v.idx.bySubsumed} {
			for _, q := range m {
				held("fingerprints", q.e)
			}
		}
		for _, list := range [...][]*record{v.idx.ended, v.idx.endedCoded} {
			for _, r := range list {
				held("ended", r)
			}
		}
		v.mu.RUnlock()
		compare(stage)
	}
	repack("compacted")
	if got := before.Entity(); jsonOf(t, got) != jsonOf(t, beforeEntity) {
		t.Errorf("a Ref from before the compaction rebuilds %s, was %s", jsonOf(t, got), jsonOf(t, beforeEntity))
	}

	// A few entities change (the index's one-by-one path), then many
	// (its merge), then new ones arrive beside changes.
	// The lifecycle stays (a change of it needs its audit row): health and
	// findings come and go, arrivals cross the window, updates reorder.
	rewrite := func(ids []int) {
		t.Helper()
		now := float64(testNow.Unix())
		for _, i := range ids {
			health, reasons := "running", "[]"
			if r.IntN(2) == 0 {
				health, reasons = "stalled", stalledJSON
			}
			if _, err := db.Exec(`UPDATE entities SET
				health = CASE WHEN lifecycle = 'running' THEN ? ELSE health END,
				reasons = CASE WHEN lifecycle = 'running' THEN ? ELSE reasons END,
				ended_at = CASE WHEN ended_at IS NOT NULL THEN ? END,
				lifecycle_at = ?, updated_at = ? WHERE id = ?`,
				health, reasons, now-float64(r.IntN(3*86400)), now-float64(r.IntN(3*86400)), now-float64(r.IntN(2000)),
				fmt.Sprintf("e-%05d", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rewrite([]int{3, 97, 412})
	compare("three changed")
	rewrite(r.Perm(600)[:250])
	compare("250 changed")
	repack("compacted again")
	seed(t, db, r, 600, 150)
	rewrite(r.Perm(600)[:40])
	compare("150 new, 40 changed")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUpdateKeepsOrder checks both of update's paths against sorting the
// set from scratch.
func TestUpdateKeepsOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name            string
		size, rm, added int
	}{
		{"empty", 0, 0, 0},
		{"first inserts", 0, 0, 5},
		{"few", 200, 3, 4},
		{"at the threshold", 200, 8, 8},
		{"many", 200, 60, 90},
		{"all removed", 50, 50, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s []int
			seen := map[int]bool{}
			draw := func() int {
				for {
					if v := r.IntN(10_000); !seen[v] {
						seen[v] = true
						return v
					}
				}
			}
			for range c.size {
				s = append(s, draw())
			}
			slices.Sort(s)
			removed := slices.Clone(s)
			r.Shuffle(len(removed), func(i, j int) { removed[i], removed[j] = removed[j], removed[i] })
			removed = removed[:c.rm]
			var added []int
			for range c.added {
				added = append(added, draw())
			}
			want := slices.Clone(added)
			for _, v := range s {
				if !slices.Contains(removed, v) {
					want = append(want, v)
				}
			}
			slices.Sort(want)
			got := update(s, slices.Clone(removed), slices.Clone(added), cmp.Compare[int])
			if !slices.Equal(got, want) {
				t.Errorf("update = %v, want %v", got, want)
			}
		})
	}
}
