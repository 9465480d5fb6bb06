package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"watchdog/state"
	"watchdog/store"
	"watchdog/wire"
)

func TestHealthReadyMetrics(t *testing.T) {
	var notReady error
	e := newEnv(t, withReady(func() error { return notReady }))
	if r := e.do("GET", "/healthz", ""); r.status != 200 || strings.TrimSpace(string(r.body)) != "ok" {
		t.Errorf("healthz: %d %q", r.status, r.body)
	}
	if r := e.do("GET", "/readyz", ""); r.status != 200 {
		t.Errorf("readyz ready: %d %q", r.status, r.body)
	}
	notReady = errors.New("no sweep has completed yet")
	if r := e.do("GET", "/readyz", ""); r.status != 503 || !strings.Contains(string(r.body), "no sweep has completed yet") {
		t.Errorf("readyz not ready: %d %q", r.status, r.body)
	}
	// Uncompressed even to a scraper that takes gzip (ADR-0061): the
	// header asked by hand, the client does not decompress for us.
	r := e.do("GET", "/metrics", "", "Accept-Encoding", "gzip")
	if r.status != 200 || !strings.Contains(string(r.body), "watchdog_build_info{") || !strings.Contains(string(r.body), "go_goroutines") {
		t.Errorf("metrics: %d\n%s", r.status, r.body)
	}
	if enc := r.header.Get("Content-Encoding"); enc != "" {
		t.Errorf("metrics to a scraper taking gzip: Content-Encoding %q, want none", enc)
	}

	// Unknown paths and wrong methods answer in JSON too.
	r = e.do("GET", "/nope", "")
	if r.status != 404 || r.errorBody(t).Cause != "not_found" {
		t.Errorf("unknown path: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/healthz", "")
	if r.status != 405 || r.header.Get("Allow") != "GET" || r.errorBody(t).Cause != "method_not_allowed" {
		t.Errorf("POST /healthz: %d %v %s", r.status, r.header, r.body)
	}
	r = e.do("DELETE", "/api/v1/entities", "")
	if r.status != 405 || r.header.Get("Allow") != "GET, POST" {
		t.Errorf("DELETE entities: %d %v %s", r.status, r.header, r.body)
	}
}

func TestReadyWithoutCheckAndNoGatherer(t *testing.T) {
	e := newEnv(t, withoutGatherer())
	if r := e.do("GET", "/readyz", ""); r.status != 200 {
		t.Errorf("readyz with no check: %d", r.status)
	}
	if r := e.do("GET", "/metrics", ""); r.status != 404 {
		t.Errorf("/metrics without a gatherer: %d", r.status)
	}
}

func TestRegister(t *testing.T) {
	e := newEnv(t)
	body := `{"type":"run","id":"s-42","label":"reviewer for PR 1064","lifecycle":"running","timeout_seconds":900,
		"artifacts_root":"/srv/runs/s-42","artifacts":[{"path":"review.md","min_bytes":1}],"metadata":{"pr":1064}}`
	r := e.do("POST", "/api/v1/entities", body)
	if r.status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	var got wire.Entity
	e.decode(r, &got)
	if got.Type != "session" || got.ID != "s-42" || got.Lifecycle == nil || *got.Lifecycle != "running" ||
		got.State.Lifecycle != "running" || got.Display == "" || !got.CreatedAt.Equal(unixAt(e.seconds())) || len(got.Artifacts) != 1 || !got.Artifacts[0].Required {
		t.Errorf("created entity: %+v", got)
	}

	// Re-registering updates registered fields, never the lifecycle.
	e.clock.Advance(1e9)
	r = e.do("POST", "/api/v1/entities", `{"type":"session","id":"s-42","label":"renamed","lifecycle":"pending"}`)
	if r.status != http.StatusOK {
		t.Fatalf("re-register: %d %s", r.status, r.body)
	}
	e.decode(r, &got)
	if got.Label != "renamed" || *got.Lifecycle != "running" {
		t.Errorf("updated entity: label %q lifecycle %q", got.Label, *got.Lifecycle)
	}

	// A legacy registration.
	r = e.do("POST", "/api/v1/entities", `{"type":"play","id":"p-old","lifecycle":null}`)
	if r.status != http.StatusCreated {
		t.Fatalf("legacy: %d %s", r.status, r.body)
	}
	e.decode(r, &got)
	if got.Lifecycle != nil || !got.State.Legacy() {
		t.Errorf("legacy entity: %+v", got)
	}
}

func TestRegisterRejectsAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	big := `{"type":"session","id":"s-2","label":"` + strings.Repeat("x", wire.MaxBody) + `"}`
	cases := []struct {
		name   string
		body   string
		status int
		cause  string
		says   string
	}{
		// Failure cases: the document.
		{"malformed", `{"type":"session",`, 400, "bad_request", "malformed JSON"},
		{"not an object", `[1,2]`, 400, "bad_request", "want a JSON object"},
		{"unknown field", `{"type":"session","id":"s-2","colour":"red"}`, 400, "bad_request", "colour"},
		{"trailing data", `{"type":"session","id":"s-2"} {}`, 400, "bad_request", "trailing"},
		{"empty", ``, 400, "bad_request", "empty document"},
		{"missing id", `{"type":"session"}`, 400, "bad_request", `"id" is required`},
		{"wrong type of field", `{"type":"session","id":"s-2","pid":"x"}`, 400, "bad_request", `"pid"`},
		{"too large", big, 413, "too_large", "too large"},
		// Failure cases: the vocabulary.
		{"unknown type", `{"type":"spaceship","id":"s-2"}`, 422, "unknown_type", "spaceship"},
		{"unknown lifecycle", `{"type":"session","id":"s-2","lifecycle":"dancing"}`, 422, "unknown_state", "dancing"},
		{"bad id", `{"type":"session","id":"-bad id"}`, 400, "invalid_input", "id"},
		{"negative pid", `{"type":"session","id":"s-2","pid":-1}`, 422, "over_limit", "pid: -1 is out of range"},
		{"pattern lock", `{"type":"session","id":"s-2","lock_files":["*.lock"]}`, 400, "invalid_input", "lock_files"},
		// Failure cases: a contract beyond the limits the probe keeps.
		{"deep glob", `{"type":"session","id":"s-2","lifecycle":"completed","artifacts_root":"/srv/x","artifacts":[{"path":"` + strings.Repeat("*/", 30) + `x"}]}`, 422, "over_limit", "31 path components, the limit is 16"},
		{"many wildcards", `{"type":"session","id":"s-2","artifacts_root":"/srv/x","artifacts":[{"path":"*/*/*/*/*/*/nomatch"}]}`, 422, "over_limit", "6 components with wildcards, the limit is 4"},
		{"many artifacts", `{"type":"session","id":"s-2","artifacts_root":"/srv/x","artifacts":[` + strings.Repeat(`{"path":"*.md"},`, 100) + `{"path":"x"}]}`, 422, "over_limit", "101 artifacts: the limit is 100 per contract"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", "/api/v1/entities", c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			eb := r.errorBody(t)
			if eb.Cause != c.cause || !strings.Contains(eb.Error, c.says) {
				t.Errorf("error %+v, want cause %s mentioning %q", eb, c.cause, c.says)
			}
			e.assertUnchanged(before, c.name)
		})
	}
}

func TestGetAndListEntities(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-ok", "running")
	e.register("session", "s-dead", "running")
	e.register("play", "p-1", "planned")
	e.registerLegacy("session", "s-old")
	e.move("session", "s-ok", "completed", "")
	e.move("session", "s-dead", "failed", state.RunFailedExitNonzero)

	// One entity, by alias, with its audit rows oldest first.
	r := e.do("GET", "/api/v1/entities/run/s-dead", "")
	if r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	var got wire.Entity
	e.decode(r, &got)
	if got.Transitions == nil || len(*got.Transitions) != 2 || (*got.Transitions)[1].ReasonCode != string(state.RunFailedExitNonzero) ||
		(*got.Transitions)[1].Actor != "orchestrator" || got.State.Severity != state.SeverityCritical {
		t.Errorf("entity read: %+v", got)
	}
	for path, cause := range map[string]string{
		"/api/v1/entities/session/nobody":   "not_found",
		"/api/v1/entities/spaceship/s-dead": "unknown_type",
	} {
		r := e.do("GET", path, "")
		if r.status != 404 || r.errorBody(t).Cause != cause {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}

	list := func(query string) []string {
		t.Helper()
		r := e.do("GET", "/api/v1/entities"+query, "")
		if r.status != 200 {
			t.Fatalf("list %s: %d %s", query, r.status, r.body)
		}
		var l wire.EntityList
		e.decode(r, &l)
		var ids []string
		for _, it := range l.Items {
			if it.Transitions != nil {
				t.Errorf("list item %s carries audit rows", it.ID)
			}
			ids = append(ids, it.ID)
		}
		if l.Total != len(l.Items) {
			t.Errorf("total %d for %d items", l.Total, len(l.Items))
		}
		return ids
	}
	if got := fmt.Sprint(list("")); got != "[s-dead p-1 s-ok s-old]" {
		t.Errorf("list all (most severe first, legacy last): %s", got)
	}
	if got := fmt.Sprint(list("?type=run")); got != "[s-dead s-ok s-old]" {
		t.Errorf("list sessions: %s", got)
	}
	if got := fmt.Sprint(list("?severity=critical,neutral&type=session")); got != "[s-dead s-ok]" {
		t.Errorf("list by severity: %s", got)
	}
	for _, q := range []string{"?type=spaceship", "?severity=dire"} {
		if r := e.do("GET", "/api/v1/entities"+q, ""); r.status != 400 || r.errorBody(t).Cause != "bad_request" {
			t.Errorf("list %s: %d %s", q, r.status, r.body)
		}
	}
}

func TestHeartbeat(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	r := e.do("POST", "/api/v1/entities/session/s-1/heartbeat", "")
	if r.status != 200 {
		t.Fatalf("empty heartbeat: %d %s", r.status, r.body)
	}
	e.clock.Advance(5e9)
	r = e.do("POST", "/api/v1/entities/run/s-1/heartbeat", `{"progress":"step 3 of 7"}`)
	if r.status != 200 {
		t.Fatalf("heartbeat: %d %s", r.status, r.body)
	}
	var got wire.Entity
	e.decode(r, &got)
	if got.HeartbeatProgress != "step 3 of 7" || !got.HeartbeatAt.Equal(unixAt(e.seconds())) {
		t.Errorf("heartbeat stored: at %v progress %q", got.HeartbeatAt, got.HeartbeatProgress)
	}

	cases := []struct {
		name, path, body string
		status           int
		cause            string
	}{
		{"unknown field", "/api/v1/entities/session/s-1/heartbeat", `{"progres":"x"}`, 400, "bad_request"},
		{"malformed", "/api/v1/entities/session/s-1/heartbeat", `{"progress":`, 400, "bad_request"},
		{"long progress", "/api/v1/entities/session/s-1/heartbeat", `{"progress":"` + strings.Repeat("x", 2000) + `"}`, 400, "bad_request"},
		{"too large", "/api/v1/entities/session/s-1/heartbeat", `{"progress":"` + strings.Repeat("x", wire.MaxBody) + `"}`, 413, "too_large"},
		{"unknown entity", "/api/v1/entities/session/nobody/heartbeat", ``, 404, "not_found"},
		{"unknown type", "/api/v1/entities/spaceship/s-1/heartbeat", ``, 404, "unknown_type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", c.path, c.body)
			if r.status != c.status || r.errorBody(t).Cause != c.cause {
				t.Errorf("%d %s, want %d %s", r.status, r.body, c.status, c.cause)
			}
			e.assertUnchanged(before, c.name)
		})
	}
}

func TestTransitionApplied(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	r := e.do("POST", "/api/v1/entities/session/s-1/transitions",
		`{"to":"aborted","reason":{"code":"run.aborted.sigint","message":"ctrl-c","evidence":[{"kind":"tool_result","detail":"exit 130"}]},"expect_from":"running","trigger":"user_terminated"}`)
	if r.status != 200 {
		t.Fatalf("transition: %d %s", r.status, r.body)
	}
	var got wire.TransitionResult
	e.decode(r, &got)
	if *got.Lifecycle != "aborted" || got.State.Outcome != "aborted" || got.State.Severity != state.SeverityCritical || !got.EndedAt.Equal(unixAt(e.seconds())) {
		t.Errorf("after transition: %+v", got)
	}
	// The lifecycle it left, so a client prints FROM -> TO without a read.
	if got.From != "running" {
		t.Errorf("from = %q, want running", got.From)
	}
	rows, err := e.st.Transitions(context.Background(), "session", "s-1")
	if err != nil {
		t.Fatal(err)
	}
	last := rows[len(rows)-1]
	if len(rows) != 2 || last.Actor != "orchestrator" || last.Trigger != "user_terminated" || last.ReasonCode != "run.aborted.sigint" || last.Message != "ctrl-c" {
		t.Errorf("audit rows: %+v", rows)
	}
	if v := e.metric("watchdog_transitions_total", "entity_type", "session", "from", "running", "to", "aborted", "actor", "orchestrator"); v != 1 {
		t.Errorf("watchdog_transitions_total = %v", v)
	}
	// An admin may abort a session (the Session Status Vocabulary design) and says so in the audit log.
	e.register("session", "s-2", "running")
	if r := e.do("POST", "/api/v1/entities/session/s-2/transitions", `{"to":"failed","actor":"admin","reason":{"code":"run.failed.operator"}}`); r.status != 200 {
		t.Errorf("admin failed: %d %s", r.status, r.body)
	}
}

func TestTransitionRejectsAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.register("workflow", "wf-1", "running")
	e.observe("workflow", "wf-1", state.HealthRunning, state.DeliveryPartial, state.RunDeliveryPartial)
	big := `{"to":"completed","reason":{"code":"run.completed.exit_zero","message":"` + strings.Repeat("x", wire.MaxBody) + `"}}`
	const sess = "/api/v1/entities/session/s-1/transitions"
	cases := []struct {
		name   string
		path   string
		body   string
		status int
		cause  string
		says   string
	}{
		// Failure cases: the document (400, 413).
		{"malformed", sess, `{"to":`, 400, "bad_request", "malformed JSON"},
		{"unknown field", sess, `{"to":"completed","why":"done"}`, 400, "bad_request", `"why"`},
		{"missing to", sess, `{"reason":{"code":"run.completed.exit_zero"}}`, 400, "bad_request", `"to" is required`},
		{"empty body", sess, ``, 400, "bad_request", "empty document"},
		{"bad id", "/api/v1/entities/session/-x/transitions", `{"to":"completed"}`, 400, "invalid_input", "id"},
		{"bad actor", sess, `{"to":"completed","actor":"mallory"}`, 400, "invalid_input", "mallory"},
		{"bad trigger", sess, `{"to":"completed","trigger":"whim"}`, 400, "invalid_input", "whim"},
		{"bad evidence kind", sess, `{"to":"failed","reason":{"code":"run.failed.exit_nonzero","evidence":[{"kind":"rumour"}]}}`, 400, "invalid_input", "rumour"},
		{"too large", sess, big, 413, "too_large", "too large"},
		// Failure cases: unknown things (404).
		{"unknown entity", "/api/v1/entities/session/nobody/transitions", `{"to":"completed"}`, 404, "not_found", "not found"},
		{"unknown type", "/api/v1/entities/spaceship/s-1/transitions", `{"to":"completed"}`, 404, "unknown_type", "spaceship"},
		// Failure cases: rights (403).
		{"admin target", sess, `{"to":"completed","actor":"admin"}`, 403, "forbidden", "admin may move a session only to failed, aborted, cancelled"},
		{"reaper actor", sess, `{"to":"aborted","actor":"reaper","reason":{"code":"run.aborted.operator"}}`, 403, "forbidden", "reaper"},
		// Failure cases: a lost race (409).
		{"stale expect_from", sess, `{"to":"completed","expect_from":"pending"}`, 409, "conflict", "is running, not pending"},
		// Failure cases: the vocabulary and its rules (422).
		{"invalid edge", sess, `{"to":"pending"}`, 422, "invalid_transition", "running -> pending is not allowed"},
		{"unknown state", sess, `{"to":"dancing"}`, 422, "unknown_state", "dancing"},
		{"unknown expect_from", sess, `{"to":"completed","expect_from":"dancing"}`, 422, "unknown_state", "dancing"},
		{"unknown reason", sess, `{"to":"failed","reason":{"code":"run.failed.gremlins"}}`, 422, "unknown_reason", "run.failed.gremlins"},
		{"malformed reason", sess, `{"to":"failed","reason":{"code":"Run Failed"}}`, 422, "unknown_reason", "malformed reason code"},
		{"reason required", sess, `{"to":"failed"}`, 422, "reason_required", "needs a reason code"},
		{"reason without code", sess, `{"to":"failed","reason":{"message":"it broke"}}`, 422, "reason_required", "needs a code"},
		{"workflow rule", "/api/v1/entities/workflow/wf-1/transitions", `{"to":"completed"}`, 422, "invalid_transition", "reserved for full completion"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			r := e.do("POST", c.path, c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			eb := r.errorBody(t)
			if eb.Cause != c.cause || !strings.Contains(eb.Error, c.says) {
				t.Errorf("error %+v, want cause %s mentioning %q", eb, c.cause, c.says)
			}
			e.assertUnchanged(before, c.name)
		})
	}
	// Every refusal was counted, including those the API made itself.
	total := 0.0
	for _, cause := range []string{"invalid_input", "not_found", "unknown_type", "forbidden", "conflict", "invalid_transition", "unknown_state", "unknown_reason", "reason_required"} {
		for _, typ := range []string{"session", "workflow", "unknown"} {
			total += e.metric("watchdog_transitions_rejected_total", "entity_type", typ, "cause", cause)
		}
	}
	if int(total) != len(cases) {
		t.Errorf("watchdog_transitions_rejected_total sums to %v, want %d", total, len(cases))
	}
}

// TestTransitionConflictUnderConcurrentWriters: 20 clients race to end the
// same running session, each with expect_from running. Exactly one wins;
// the others get 409 and the audit log has exactly one end.
func TestTransitionConflictUnderConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-race", "running")
	targets := []string{
		`{"to":"completed","expect_from":"running"}`,
		`{"to":"failed","expect_from":"running","reason":{"code":"run.failed.exit_nonzero"}}`,
		`{"to":"cancelled","expect_from":"running","reason":{"code":"run.cancelled.operator"}}`,
		`{"to":"aborted","expect_from":"running","reason":{"code":"run.aborted.operator"}}`,
	}
	const racers = 20
	statuses := make([]int, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < racers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/entities/session/s-race/transitions", strings.NewReader(targets[i%len(targets)]))
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}(i)
	}
	close(start)
	wg.Wait()
	wins, conflicts := 0, 0
	for _, s := range statuses {
		switch s {
		case 200:
			wins++
		case 409:
			conflicts++
		}
	}
	if wins != 1 || conflicts != racers-1 {
		t.Fatalf("statuses %v: %d wins, %d conflicts", statuses, wins, conflicts)
	}
	rows, err := e.st.Transitions(context.Background(), "session", "s-race")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Errorf("%d audit rows, want registration + one end", len(rows))
	}
}

func TestAuth(t *testing.T) {
	const token = "s3cret-token-value"
	e := newEnv(t, withToken(token))
	e.register("session", "s-1", "running")

	posts := []struct{ path, body string }{
		{"/api/v1/entities", `{"type":"session","id":"s-2"}`},
		{"/api/v1/entities/session/s-1/heartbeat", ``},
		{"/api/v1/entities/session/s-1/transitions", `{"to":"completed"}`},
		{"/api/attention/snooze", `{"fingerprint":"session:s-1:run.health.stalled","until":9999999999}`},
		{"/api/attention/dismiss", `{"fingerprint":"session:s-1:run.health.stalled"}`},
	}
	for _, p := range posts {
		for name, auth := range map[string]string{
			"no header":    "",
			"wrong token":  "Bearer nope",
			"wrong scheme": "Basic " + token,
			"prefix":       "Bearer " + token[:5],
			"longer":       "Bearer " + token + "x",
		} {
			before := e.snapshot()
			// An explicit empty value deletes the env's own header.
			r := e.do("POST", p.path, p.body, "Authorization", auth)
			if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") || r.errorBody(t).Cause != "unauthorized" {
				t.Errorf("POST %s with %s: %d %v %s", p.path, name, r.status, r.header, r.body)
			}
			e.assertUnchanged(before, "POST "+p.path+" with "+name)
		}
	}
	// Reads need a principal too (auth.public_reads is off); the
	// health endpoints and /metrics stay open.
	for _, path := range []string{"/api/v1/entities/session/s-1", "/api/v1/entities", "/api/attention", "/api/attention/triage", "/api/v1/entities/session/s-1/transitions"} {
		if r := e.do("GET", path, "", "Authorization", ""); r.status != 401 || r.errorBody(t).Cause != "unauthorized" {
			t.Errorf("GET %s without a token: %d %s", path, r.status, r.body)
		}
		if r := e.do("GET", path, ""); r.status != 200 {
			t.Errorf("GET %s with the token: %d %s", path, r.status, r.body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := e.do("GET", path, "", "Authorization", ""); r.status != 200 {
			t.Errorf("GET %s without a token: %d", path, r.status)
		}
	}
	// auth.token_file's token is the administrator's: it may act as admin.
	e.register("session", "s-adm", "running")
	if r := e.do("POST", "/api/v1/entities/session/s-adm/transitions", `{"to":"aborted","actor":"admin","reason":{"code":"run.aborted.operator"}}`); r.status != 200 {
		t.Errorf("admin with the admin token: %d %s", r.status, r.body)
	}
	if rows, _ := e.st.Transitions(context.Background(), "session", "s-adm"); rows[len(rows)-1].Actor != "admin" || rows[len(rows)-1].Principal != "token:admin" {
		t.Errorf("admin's row: %+v", rows[len(rows)-1])
	}
	if r := e.do("POST", "/api/v1/entities", `{"type":"session","id":"s-3","lifecycle":"running"}`); r.status != 201 {
		t.Errorf("register with the token: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/entities/session/s-3/transitions", `{"to":"completed","actor":"exec"}`); r.status != 200 {
		t.Errorf("exec with the token: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/entities/session/s-1/transitions", `{"to":"completed"}`, "Authorization", "bearer "+token); r.status != 200 {
		t.Errorf("lower-case scheme: %d %s", r.status, r.body)
	}
	rows, _ := e.st.Transitions(context.Background(), "session", "s-1")
	if rows[len(rows)-1].Actor != "orchestrator" {
		t.Errorf("default actor with a token: %+v", rows[len(rows)-1])
	}

	// The token never reaches the log.
	if e.logs.Len() == 0 {
		t.Fatal("no access log lines at debug level")
	}
	for _, entry := range e.logs.All() {
		line := fmt.Sprint(entry.Message, entry.ContextMap())
		if strings.Contains(line, token) || strings.Contains(line, token[:5]) {
			t.Errorf("token in log: %s", line)
		}
	}
}

func TestStoreFailureIs500WithoutDetail(t *testing.T) {
	e := newEnv(t)
	e.register("session", "s-1", "running")
	e.st.Close()
	r := e.do("GET", "/api/v1/entities/session/s-1", "")
	if r.status != 500 {
		t.Fatalf("closed store: %d %s", r.status, r.body)
	}
	eb := r.errorBody(t)
	if eb.Cause != "internal" || strings.Contains(eb.Error, ".db") {
		t.Errorf("500 body leaks detail or lacks the cause: %+v", eb)
	}
	found := false
	for _, entry := range e.logs.FilterMessage("request failed").All() {
		if strings.Contains(fmt.Sprint(entry.ContextMap()["error"]), "closed") {
			found = true
		}
	}
	if !found {
		t.Errorf("the store error was not logged: %v", e.logs.All())
	}
	// A scrape still answers, with the store collector marked failed.
	m := e.do("GET", "/metrics", "")
	if m.status != 200 || !strings.Contains(string(m.body), `watchdog_scrape_collector_success{collector="store"} 0`) {
		t.Errorf("scrape with a closed store: %d\n%s", m.status, m.body)
	}
}

// failingStore makes every dismissal write fail, to prove a store error
// mid-request is a 500 that changed nothing.
type failingStore struct{ Store }

func (failingStore) UpsertDismissal(context.Context, store.Dismissal) error {
	return errors.New("disk full")
}
