package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"watchdog/wire"
)

// TestOverLimitIs422AndChangesNothing: every bounded field over its limit
// is refused whole, naming the field and the limit; a body over 1 MiB is
// 413; metadata nested 9,000 levels deep is refused at once.
func TestOverLimitIs422AndChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	transition := func(reason string) string {
		return `{"to":"failed","reason":` + reason + `}`
	}
	evidence := func(n int, detail string) string {
		items := make([]string, n)
		for i := range items {
			items[i] = `{"kind":"tool_result","detail":"` + detail + `"}`
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	deep := func(levels int) string {
		return `{"type":"session","id":"s-deep","metadata":` + strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels) + "}"
	}
	const tpath = "/api/v1/entities/session/s-1/transitions"
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"900 KB message", tpath, transition(`{"code":"run.failed.exit_nonzero","message":"` + strings.Repeat("m", 900000) + `"}`), 422,
			"reason.message: 900000 bytes, over the 4096-byte limit"},
		{"33 evidence items", tpath, transition(`{"code":"run.failed.exit_nonzero","evidence":` + evidence(33, "x") + `}`), 422,
			"reason.evidence: 33 items, over the 32-item limit"},
		{"long evidence detail", tpath, transition(`{"code":"run.failed.exit_nonzero","evidence":` + evidence(2, strings.Repeat("d", 3000)) + `}`), 422,
			"reason.evidence[0].detail: 3000 bytes, over the 2048-byte limit"},
		{"long label", "/api/v1/entities", `{"type":"session","id":"s-2","label":"` + strings.Repeat("l", 300) + `"}`, 422,
			"label: 300 bytes, over the 256-byte limit"},
		{"long id", "/api/v1/entities", `{"type":"session","id":"` + strings.Repeat("i", 300) + `"}`, 422,
			"id: 300 bytes, over the 256-byte limit"},
		{"id one over", "/api/v1/entities", `{"type":"session","id":"` + strings.Repeat("i", wire.MaxID+1) + `"}`, 422,
			"id: 257 bytes, over the 256-byte limit"},
		{"65 lock files", "/api/v1/entities", `{"type":"session","id":"s-2","lock_files":["/l"` + strings.Repeat(`,"/l"`, 64) + `]}`, 422,
			"lock_files: 65 items, over the 64-item limit"},
		{"long heartbeat path", "/api/v1/entities", `{"type":"session","id":"s-2","heartbeat_file":"/` + strings.Repeat("h", 5000) + `"}`, 422,
			"heartbeat_file: 5001 bytes, over the 4096-byte limit"},
		{"long dependency", "/api/v1/entities", `{"type":"play","id":"p-2","depends_on":["` + strings.Repeat("p", 300) + `"]}`, 422,
			"depends_on[0]: 300 bytes, over the 256-byte limit"},
		{"big metadata", "/api/v1/entities", `{"type":"session","id":"s-2","metadata":{"blob":"` + strings.Repeat("b", 20000) + `"}}`, 422,
			"metadata: 20011 bytes, over the 16384-byte limit"},
		{"metadata 9 levels", "/api/v1/entities", deep(9), 422,
			"metadata: nested 9 levels deep, over the 8-level limit"},
		{"metadata 9000 levels", "/api/v1/entities", deep(9000), 422, "metadata: "},
		{"whole reason over", tpath, transition(`{"code":"run.failed.exit_nonzero","message":"` + strings.Repeat("m", wire.MaxMessage) + `","evidence":` +
			evidence(wire.MaxEvidence, strings.Repeat("d", wire.MaxEvidenceField)) + `}`), 422,
			"reason (message and evidence together): 69984 bytes, over the 16384-byte limit"},
		{"body over 1 MiB", tpath, transition(`{"code":"run.failed.exit_nonzero","message":"` + strings.Repeat("m", 1<<20) + `"}`), 413, "over 1048576 bytes"},
	} {
		before := e.snapshot()
		start := time.Now()
		r := e.do("POST", c.path, c.body)
		took := time.Since(start)
		if r.status != c.status || !strings.Contains(r.errorBody(t).Error, c.want) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, r.status, r.body, c.status, c.want)
		}
		// A refusal reads at most the limit (1 MiB), never the whole
		// document: milliseconds, so a ceiling that load cannot reach
		// still catches a parse that walks what it refuses.
		if took > 20*time.Second {
			t.Errorf("%s: refused after %s", c.name, took)
		}
		e.assertUnchanged(before, c.name)
	}
	// At the limits exactly, everything is accepted.
	ok := []struct{ path, body string }{
		{"/api/v1/entities", deep(wire.MaxMetadataDepth)},
		{"/api/v1/entities", `{"type":"session","id":"s-3","label":"` + strings.Repeat("l", wire.MaxLabel) + `"}`},
		{tpath, transition(`{"code":"run.failed.exit_nonzero","message":"` + strings.Repeat("m", wire.MaxMessage) + `","evidence":` +
			evidence(wire.MaxEvidence, strings.Repeat("d", atLimitDetail)) + `}`)},
	}
	for _, c := range ok {
		if r := e.do("POST", c.path, c.body); r.status >= 300 {
			t.Errorf("at the limit: POST %s: %d %s", c.path, r.status, r.body)
		}
	}
}

// atLimitDetail is the evidence detail that, in each of MaxEvidence items
// of kind tool_result beside a MaxMessage message, fills a reason to
// exactly MaxReasonBytes: the largest audit row a client can make.
const atLimitDetail = (wire.MaxReasonBytes-wire.MaxMessage)/wire.MaxEvidence - len("tool_result")

// TestEntityReadBoundedAndTransitionsPaged: 400 transitions with reasons
// at the limit (the largest rows a client can write) keep the entity read
// and every page to a few MB (the latest 100 and a total; pages of at
// most MaxTransitionsPage); …/transitions pages every row exactly once,
// in order.
func TestEntityReadBoundedAndTransitionsPaged(t *testing.T) {
	e := newEnv(t)
	e.register("agent", "a1", "idle")
	msg := strings.Repeat("m", wire.MaxMessage)
	const moves = 400
	for i := range moves {
		to := "busy"
		if i%2 == 1 {
			to = "idle"
		}
		ev := make([]string, wire.MaxEvidence)
		for j := range ev {
			ev[j] = fmt.Sprintf(`{"kind":"tool_result","detail":%q}`, strings.Repeat("d", atLimitDetail))
		}
		body := fmt.Sprintf(`{"to":%q,"trigger":"prompt_received","reason":{"code":"run.health.idle","message":%q,"evidence":[%s]}}`, to, msg, strings.Join(ev, ","))
		if r := e.do("POST", "/api/v1/entities/agent/a1/transitions", body); r.status != 200 {
			t.Fatalf("move %d: %d %s", i, r.status, r.body)
		}
	}
	all, err := e.st.Transitions(context.Background(), "agent", "a1")
	if err != nil || len(all) != moves+1 {
		t.Fatalf("%d audit rows (%v), want %d", len(all), err, moves+1)
	}

	r := e.do("GET", "/api/v1/entities/agent/a1", "")
	if r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	if len(r.body) > 3<<20 {
		t.Errorf("entity read is %d bytes; want under 3 MiB", len(r.body))
	}
	var got wire.Entity
	e.decode(r, &got)
	if got.Transitions == nil || len(*got.Transitions) != wire.TransitionsInEntity || got.TransitionsTotal == nil || *got.TransitionsTotal != moves+1 {
		t.Fatalf("entity read: %v rows, total %v; want the latest %d of %d", got.Transitions != nil, got.TransitionsTotal, wire.TransitionsInEntity, moves+1)
	}
	rows := *got.Transitions
	if rows[0].Seq != all[len(all)-100].Seq || rows[99].Seq != all[len(all)-1].Seq {
		t.Errorf("entity read rows %d..%d, want the latest (%d..%d), oldest first", rows[0].Seq, rows[99].Seq, all[len(all)-100].Seq, all[len(all)-1].Seq)
	}

	for _, limit := range []int{0, 7, wire.MaxTransitionsPage} { // 0: the default
		var seqs []int64
		after := int64(0)
		for pages := 0; ; pages++ {
			if pages > moves+2 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			q := fmt.Sprintf("/api/v1/entities/agent/a1/transitions?after=%d", after)
			if limit > 0 {
				q += fmt.Sprintf("&limit=%d", limit)
			}
			r := e.do("GET", q, "")
			if r.status != 200 {
				t.Fatalf("%s: %d %s", q, r.status, r.body)
			}
			if len(r.body) > 5<<20 {
				t.Fatalf("%s: a page of %d bytes; want under 5 MiB", q, len(r.body))
			}
			var p wire.TransitionPage
			e.decode(r, &p)
			want := limit
			if limit == 0 {
				want = wire.DefaultTransitionsPage
			}
			if len(p.Items) > want {
				t.Fatalf("%s: %d rows", q, len(p.Items))
			}
			for _, row := range p.Items {
				seqs = append(seqs, row.Seq)
			}
			if p.NextAfter == 0 {
				break
			}
			if p.NextAfter != p.Items[len(p.Items)-1].Seq {
				t.Fatalf("%s: next_after %d, last row %d", q, p.NextAfter, p.Items[len(p.Items)-1].Seq)
			}
			after = p.NextAfter
		}
		if len(seqs) != len(all) {
			t.Fatalf("limit %d: paged %d rows, want %d", limit, len(seqs), len(all))
		}
		for i, row := range all {
			if seqs[i] != row.Seq {
				t.Fatalf("limit %d: row %d is seq %d, want %d", limit, i, seqs[i], row.Seq)
			}
		}
	}

	for _, c := range []struct {
		query  string
		status int
	}{
		{"/api/v1/entities/agent/a1/transitions?limit=0", 400},
		{"/api/v1/entities/agent/a1/transitions?limit=1001", 400},
		{"/api/v1/entities/agent/a1/transitions?after=-1", 400},
		{"/api/v1/entities/agent/a1/transitions?after=x", 400},
		{"/api/v1/entities/agent/nobody/transitions", 404},
		{"/api/v1/entities/spaceship/a1/transitions", 404},
	} {
		if r := e.do("GET", c.query, ""); r.status != c.status {
			t.Errorf("GET %s: %d %s, want %d", c.query, r.status, r.body, c.status)
		}
	}
}

// TestEntityListPages: both orders walk every entity exactly once; the
// severity order's pages concatenate to the one-page list.
func TestEntityListPages(t *testing.T) {
	e := newEnv(t)
	const n = 23
	for i := range n {
		id := fmt.Sprintf("s-%02d", i)
		e.register("session", id, "running")
		switch i % 3 {
		case 1:
			e.move("session", id, "completed", "")
		case 2:
			e.move("session", id, "failed", "run.failed.exit_nonzero")
		}
		e.clock.Advance(time.Second)
	}
	e.registerLegacy("play", "p-old")
	list := func(q string) wire.EntityList {
		t.Helper()
		r := e.do("GET", "/api/v1/entities"+q, "")
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", q, r.status, r.body)
		}
		var l wire.EntityList
		e.decode(r, &l)
		return l
	}
	ids := func(items []wire.Entity) []string {
		var out []string
		for _, it := range items {
			out = append(out, it.Type+"/"+it.ID)
		}
		return out
	}
	whole := list("")
	if len(whole.Items) != n+1 || whole.Next != "" || whole.Total != n+1 {
		t.Fatalf("one page: %d items, total %d, next %q", len(whole.Items), whole.Total, whole.Next)
	}
	for _, order := range []string{"", "severity", "id"} {
		var walked []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > n+1 {
				t.Fatalf("order %q: paging does not end", order)
			}
			q := "?limit=5&order=" + order
			if after != "" {
				q += "&after=" + after
			}
			l := list(q)
			if len(l.Items) > 5 || l.Total != n+1 {
				t.Fatalf("order %q: page of %d, total %d", order, len(l.Items), l.Total)
			}
			walked = append(walked, ids(l.Items)...)
			if l.Next == "" {
				break
			}
			after = l.Next
		}
		seen := map[string]int{}
		for _, id := range walked {
			seen[id]++
		}
		if len(walked) != n+1 || len(seen) != n+1 {
			t.Errorf("order %q: walked %d rows, %d distinct, want %d each: %v", order, len(walked), len(seen), n+1, walked)
		}
		if order != "id" && fmt.Sprint(walked) != fmt.Sprint(ids(whole.Items)) {
			t.Errorf("order %q: pages %v\nwant the one-page order %v", order, walked, ids(whole.Items))
		}
	}
	idCursor := list("?limit=2&order=id").Next
	for _, q := range []string{"?limit=0", "?limit=5001", "?order=age", "?after=garbage", "?after=" + idCursor} {
		r := e.do("GET", "/api/v1/entities"+q, "")
		if r.status != 400 || r.errorBody(t).Cause != "bad_request" {
			t.Errorf("list %s: %d %s, want 400", q, r.status, r.body)
		}
	}
	// The severity filter pages too, and the total counts what it selects.
	crit := list("?severity=critical&limit=3")
	if crit.Total != n/3 || len(crit.Items) != 3 || crit.Next == "" {
		t.Errorf("critical page: %d items, total %d, next %q", len(crit.Items), crit.Total, crit.Next)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(e.do("GET", "/api/v1/entities", "").body, &raw); err != nil || raw["next"] != nil {
		t.Errorf("a last page has no next: %v %s", err, raw["next"])
	}
}

// TestIDsUpToTheLimit: an id of 201 to 256 characters is taken, as the
// reference's limit says (issue 37: the shape check stopped at 200).
func TestIDsUpToTheLimit(t *testing.T) {
	e := newEnv(t)
	for _, n := range []int{200, 201, wire.MaxID} {
		id := strings.Repeat("i", n)
		if r := e.do("POST", "/api/v1/entities", `{"type":"session","id":"`+id+`","lifecycle":"running"}`); r.status != 201 {
			t.Errorf("an id of %d characters: %d %s, want 201", n, r.status, r.body)
		}
		if r := e.do("GET", "/api/v1/entities/session/"+id, ""); r.status != 200 {
			t.Errorf("read back the id of %d characters: %d", n, r.status)
		}
	}
}

// TestListByteBudget: a list whose items would pass wire.MaxListBytes
// ends early with a cursor, whatever the limit asked, and the pages
// walked by their cursors hold every entity exactly once.
func TestListByteBudget(t *testing.T) {
	e := newEnv(t)
	meta := `{"blob":"` + strings.Repeat("m", 15<<10) + `"}`
	const n = 600 // about 9.4 MB of metadata: past the 8 MiB budget
	for i := range n {
		id := fmt.Sprintf("big-%04d", i)
		if r := e.do("POST", "/api/v1/entities", `{"type":"session","id":"`+id+`","lifecycle":"running","metadata":`+meta+`}`); r.status != 201 {
			t.Fatalf("register %s: %d %s", id, r.status, r.body)
		}
	}
	seen := map[string]bool{}
	pages, after := 0, ""
	for {
		r := e.do("GET", "/api/v1/entities?order=id&limit=5000"+after, "")
		if r.status != 200 {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		if len(r.body) > wire.MaxListBytes+4096 {
			t.Errorf("page %d is %d bytes, over the %d-byte budget", pages, len(r.body), wire.MaxListBytes)
		}
		var l wire.EntityList
		if err := json.Unmarshal([]byte(r.body), &l); err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		if l.Total != n {
			t.Errorf("page %d: total %d, want %d", pages, l.Total, n)
		}
		for _, it := range l.Items {
			if seen[it.ID] {
				t.Errorf("%s listed twice", it.ID)
			}
			seen[it.ID] = true
		}
		pages++
		if l.Next == "" {
			break
		}
		after = "&after=" + l.Next
	}
	if len(seen) != n || pages < 2 {
		t.Errorf("%d entities in %d pages, want all %d in at least 2", len(seen), pages, n)
	}
}
