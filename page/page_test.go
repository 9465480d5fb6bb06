package page

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"watchdog/api"
	"watchdog/internal/testenv"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/transitions"
	"watchdog/wire"
)

// env is the daemon's front end as serve wires it: a SQLite store, its
// live view, the write path, and the API with the page mounted.
type env struct {
	t     testing.TB
	st    *sqlite.Store
	w     *transitions.Writer
	view  *live.View
	clock *testenv.Clock
	srv   *httptest.Server
}

// TestMain gives the drivers the view's derivation, as the daemon does
// before it opens a store: the tests' writes leave fresh columns.
func TestMain(m *testing.M) {
	store.SetDerivation(live.Columns)
	os.Exit(m.Run())
}

func newEnv(t testing.TB, token string) *env {
	t.Helper()
	return newEnvWith(t, token, nil)
}

// newEnvWith is newEnv whose page and API read heartbeat files as hb says
// (the daemon's wiring gives both this host's wire.Heartbeats).
func newEnvWith(t testing.TB, token string, hb *wire.Heartbeats) *env {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "watchdog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := testenv.NewClock(time.Date(2026, 5, 24, 12, 0, 0, 0, time.UTC))
	view := live.New(st, c.Now, 0)
	if err := view.Load(ctx); err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: st, Now: c.Now}
	pg := New(Options{View: view, Store: st, Auth: token != "", TokenFile: "/etc/watchdog/token", Now: c.Now, Heartbeats: hb})
	srv := httptest.NewServer(api.New(api.Options{Store: st, Writer: w, Now: c.Now, View: view, Tokens: adminTokens(token), Page: pg, Heartbeats: hb,
		Login: http.HandlerFunc(Login)}))
	t.Cleanup(srv.Close)
	return &env{t: t, st: st, w: w, view: view, clock: c, srv: srv}
}

func (e *env) register(typ, id, label, lifecycle string) {
	e.t.Helper()
	ent := store.Entity{Type: typ, ID: id, Label: label}
	reg := transitions.Registration{Entity: ent, Actor: transitions.ActorOrchestrator}
	if lifecycle == "" {
		reg.Legacy = true
	} else {
		reg.Entity.Lifecycle = &lifecycle
	}
	if _, err := e.w.Register(context.Background(), reg); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) move(typ, id, to string, code state.ReasonCode, msg string) {
	e.t.Helper()
	req := transitions.Request{Type: typ, ID: id, To: to, Actor: transitions.ActorOrchestrator}
	if code != "" {
		req.Reason = &state.StateReason{Code: code, Message: msg}
	}
	if _, err := e.w.Transition(context.Background(), req); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) observe(typ, id string, h state.Health, code state.ReasonCode) {
	e.t.Helper()
	ctx := context.Background()
	cur, err := e.st.Get(ctx, typ, id)
	if err != nil {
		e.t.Fatal(err)
	}
	now := e.clock.Now()
	r := state.Observed(code, "no heartbeat since the test began", state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: "seen by <the test>"})
	if _, err := e.st.RecordObservation(ctx, typ, id, store.Observation{
		Health: h, Delivery: state.DeliveryUnknown, Reasons: []state.StateReason{r}, HealthSince: now, SeenSeq: cur.LastSeq, At: now,
	}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	resp, err := e.srv.Client().Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func (e *env) page(path string) string {
	e.t.Helper()
	status, body := e.get(path)
	if status != http.StatusOK {
		e.t.Fatalf("GET %s: %d\n%s", path, status, body)
	}
	return body
}

func count(body, s string) int { return strings.Count(body, s) }

// TestQueueClusterOfSixCollapses: six sessions failed alike are one
// cluster of six in the critical section, folded behind its toggle, each
// item with its fingerprint, age, summary and the three actions; a lone
// failure of another code is a cluster of one, not folded.
func TestQueueClusterOfSixCollapses(t *testing.T) {
	e := newEnv(t, "")
	for i := range 6 {
		id := fmt.Sprintf("s-%d", i)
		e.register("session", id, "run "+id, "running")
		e.move("session", id, "failed", state.RunFailedExitNonzero, "exited with status 3")
	}
	e.register("session", "lone", "the lone one", "running")
	e.move("session", "lone", "failed", state.RunFailedArtifactContract, "review.md not produced")
	e.clock.Advance(12 * time.Minute)

	body := e.page("/")
	if count(body, `data-testid="queue"`) != 1 || count(body, `data-testid="severity-critical"`) != 1 {
		t.Fatalf("no queue or no critical section:\n%s", body)
	}
	if count(body, `data-testid="severity-warning"`) != 0 || count(body, `data-testid="severity-info"`) != 0 {
		t.Errorf("a section for a severity with no items")
	}
	six := fmt.Sprintf(`data-testid="cluster" class="cluster" data-cluster-id="cluster_%s" data-size="6"`, state.RunFailedExitNonzero)
	if count(body, six) != 1 {
		t.Errorf("no cluster of six (%s):\n%s", six, body)
	}
	one := fmt.Sprintf(`data-cluster-id="cluster_%s" data-size="1"`, state.RunFailedArtifactContract)
	if count(body, one) != 1 {
		t.Errorf("no cluster of one for the lone failure")
	}
	if n := count(body, `data-testid="cluster-toggle"`); n != 1 {
		t.Errorf("%d toggles, want 1 (only the cluster of six folds)", n)
	}
	if !regexp.MustCompile(`data-testid="cluster-toggle"[^>]*>[^<]*<span[^>]*>▶</span> 6 × `).MatchString(body) {
		t.Errorf("the toggle does not say 6 × <summary>")
	}
	if n := count(body, `data-testid="cluster-items" hidden`); n != 1 {
		t.Errorf("%d hidden item lists, want 1", n)
	}
	if n := count(body, `data-testid="item"`); n != 7 {
		t.Errorf("%d items, want 7", n)
	}
	for _, want := range []string{
		`data-fingerprint="session:s-3:` + string(state.RunFailedExitNonzero) + `"`,
		`12m ago`, `run s-3`, `href="/entities/session/s-3">Open</a>`,
		`data-testid="snooze" data-endpoint="/api/attention/snooze"`, `>Snooze 1d</button>`,
		`data-testid="dismiss"`, `>Dismiss</button>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// The snooze button carries the item's advertised body: a day from now.
	until := strconv.FormatInt(e.clock.Now().Add(24*time.Hour).Unix(), 10)
	if !strings.Contains(body, `&#34;until&#34;:`+until) {
		t.Errorf("no snooze body with until %s:\n%s", until, body)
	}
}

// TestQueueFollowsTheAPI: a snooze through the API takes the item off the
// page's queue, as off GET /api/attention.
func TestQueueFollowsTheAPI(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "a", "a", "running")
	e.move("session", "a", "failed", state.RunFailedExitNonzero, "boom")
	if !strings.Contains(e.page("/"), `data-testid="item"`) {
		t.Fatal("no item before the snooze")
	}
	body := fmt.Sprintf(`{"fingerprint":"session:a:%s","until":%d}`, state.RunFailedExitNonzero, e.clock.Now().Add(time.Hour).Unix())
	resp, err := e.srv.Client().Post(e.srv.URL+"/api/attention/snooze", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("snooze: %d", resp.StatusCode)
	}
	p := e.page("/")
	if strings.Contains(p, `data-testid="item"`) || !strings.Contains(p, `data-testid="queue-empty"`) {
		t.Errorf("the snoozed item is still on the page")
	}
}

// TestEntityTableChainPillAndFilters: a stalled session reads "Running ·
// Stalled" with a danger pill; the filters by type, severity and host
// keep what they name.
func TestEntityTableChainPillAndFilters(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "stuck", "stuck one", "running")
	e.observe("session", "stuck", state.HealthStalled, state.RunHealthStalled)
	e.register("session", "done", "done one", "running")
	e.move("session", "done", "completed", "", "")
	e.register("play", "p1", "a play", "")
	e.register("play", "p2", "other play", "running")

	body := e.page("/")
	row := regexp.MustCompile(`(?s)<tr data-testid="entity" data-type="session" data-id="stuck">.*?</tr>`).FindString(body)
	if row == "" {
		t.Fatalf("no row for the stalled session:\n%s", body)
	}
	if !strings.Contains(row, `<td data-testid="chain" data-label="State">Running · Stalled</td>`) {
		t.Errorf("stalled row's chain: %s", row)
	}
	// The compound state (the Session Status Vocabulary design): the
	// lifecycle's pill in its own colour, the stall's pill beside it,
	// never a red "Running" alone.
	if pills := pillsIn(row); pills != "lifecycle/info/Running health/danger/Stalled" {
		t.Errorf("stalled row's pills: %s\n%s", pills, row)
	}
	if n := count(body, `data-testid="entity"`); n != 4 {
		t.Errorf("%d rows, want 4", n)
	}

	crit := e.page("/?severity=critical")
	if count(crit, `data-testid="entity"`) != 1 || !strings.Contains(crit, `data-id="stuck"`) {
		t.Errorf("severity=critical keeps the wrong rows")
	}
	plays := e.page("/?type=play")
	if count(plays, `data-testid="entity"`) != 2 || strings.Contains(plays, `data-type="session"`) {
		t.Errorf("type=play keeps the wrong rows")
	}
	if n := count(e.page("/?host=elsewhere"), `data-testid="entity"`); n != 0 {
		t.Errorf("host=elsewhere keeps %d rows", n)
	}
	if status, _ := e.get("/?type=nope"); status != http.StatusBadRequest {
		t.Errorf("an unknown type: %d, want 400", status)
	}
}

// TestLegacyChipCountsLegacyEntities: the chip's number is the view's
// legacy count (watchdog_legacy_entities), and legacy rows wear the
// dotted pill.
func TestLegacyChipCountsLegacyEntities(t *testing.T) {
	e := newEnv(t, "")
	if strings.Contains(e.page("/"), `data-testid="legacy-chip"`) {
		t.Error("a legacy chip with no legacy entity")
	}
	for i := range 3 {
		e.register("session", fmt.Sprintf("old-%d", i), "", "")
	}
	e.register("session", "new", "", "running")
	body := e.page("/")
	if err := e.view.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := e.view.Counts(e.clock.Now()).Legacy
	if n != 3 {
		t.Fatalf("the view counts %d legacy entities, want 3", n)
	}
	if want := fmt.Sprintf(`>%d legacy entities</span>`, n); !strings.Contains(body, want) {
		t.Errorf("no chip %q", want)
	}
	if c := count(body, `data-tone="legacy"`); c != 3 {
		t.Errorf("%d legacy pills, want 3", c)
	}
}

// TestLabelsAndMessagesAreEscaped: a label or a message that is markup
// renders as text, in the queue, the table and the entity page.
func TestLabelsAndMessagesAreEscaped(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "x", `<script>alert(1)</script>`, "running")
	e.move("session", "x", "failed", state.RunFailedExitNonzero, `<img src=x onerror=alert(2)>`)
	for _, path := range []string{"/", "/entities/session/x"} {
		body := e.page(path)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s renders markup from a label or message", path)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the label as text", path)
		}
	}
}

// TestControlBytesNeverSent (issue 37): a message holding ESC, BEL and
// OSC sequences (a command's stderr does) is shown escaped, and no page
// sends a raw control byte.
func TestControlBytesNeverSent(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "c", "plain", "running")
	e.move("session", "c", "failed", state.RunFailedExitNonzero, "boom \x1b[31mRED\x07 \x1b]0;title\x07 \u009b2J del\x7f")
	for _, path := range []string{"/", "/entities/session/c"} {
		body := e.page(path)
		for i := 0; i < len(body); i++ {
			if c := body[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				t.Errorf("%s sends the raw control byte %#x at %d: %q", path, c, i, body[max(0, i-20):min(len(body), i+20)])
				break
			}
		}
		if strings.Contains(body, "\u009b") {
			t.Errorf("%s sends a raw C1 control (U+009B)", path)
		}
		if !strings.Contains(body, `boom \u001b[31mRED\u0007`) {
			t.Errorf("%s does not show the message's control characters escaped", path)
		}
	}
}

// TestEntityPage: the chain, the pill, the reasons with their evidence,
// and the transitions timeline, paged.
func TestEntityPage(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "s", "the session", "running")
	e.observe("session", "s", state.HealthStalled, state.RunHealthStalled)
	body := e.page("/entities/session/s")
	if pills := pillsIn(body); pills != "lifecycle/info/Running health/danger/Stalled" {
		t.Errorf("the entity page's pills: %s", pills)
	}
	for _, want := range []string{
		`<span data-testid="chain" class="chain">Running · Stalled</span>`,
		`<section data-testid="reasons"`, `data-code="` + string(state.RunHealthStalled) + `"`, `seen by &lt;the test&gt;`,
		`<ol data-testid="timeline"`, `<strong>running</strong>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the entity page lacks %s", want)
		}
	}
	if strings.Contains(body, `data-testid="older"`) {
		t.Error("an older link with one transition")
	}
	// More transitions than a page: the latest page links to the oldest.
	e.register("play", "busy", "", "running")
	for i := range TimelinePage {
		switch i % 3 {
		case 0:
			e.move("play", "busy", "blocked", state.PlayBlockedDependencyFailed, "waiting")
		case 1:
			e.move("play", "busy", "queued", "", "")
		case 2:
			e.move("play", "busy", "running", "", "")
		}
	}
	body = e.page("/entities/play/busy")
	if n := count(body, "<li data-seq="); n != TimelinePage {
		t.Errorf("%d timeline rows, want %d", n, TimelinePage)
	}
	if !strings.Contains(body, `data-testid="older" href="/entities/play/busy?after=0"`) {
		t.Fatalf("no older link:\n%s", body)
	}
	older := e.page("/entities/play/busy?after=0")
	if n := count(older, "<li data-seq="); n != TimelinePage || !strings.Contains(older, `data-testid="newer"`) {
		t.Errorf("the first page: %d rows, newer link %v", n, strings.Contains(older, `data-testid="newer"`))
	}
	if status, _ := e.get("/entities/session/nope"); status != http.StatusNotFound {
		t.Errorf("an unknown entity: %d, want 404", status)
	}
}

// TestPageGuardsAndAuth: the page is behind the API's Host guard; with
// auth on it tells the script to ask for the token; the assets are served.
func TestPageGuardsAndAuth(t *testing.T) {
	e := newEnv(t, "secret")
	// Without credentials the page is its sign-in form (401), which
	// never carries the token, and the stream is refused.
	status, login := e.get("/")
	if status != http.StatusUnauthorized || !strings.Contains(login, `data-testid="login-form"`) || strings.Contains(login, "secret") ||
		strings.Contains(login, `data-stream=`) {
		t.Errorf("GET / without credentials: %d\n%s", status, login)
	}
	if status, _ := e.get("/events"); status != http.StatusUnauthorized {
		t.Errorf("GET /events without credentials: %d", status)
	}
	// The runbook and the assets stay open: documentation, no state.
	if status, _ := e.get("/runbook"); status != http.StatusOK {
		t.Errorf("GET /runbook: %d", status)
	}
	// A wrong token gets no session; the right one a cookie that is
	// HttpOnly and SameSite=Strict and holds no token.
	post := func(body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/session", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(`{"token":"nope"}`); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token: %d %v", resp.StatusCode, resp.Cookies())
	}
	resp := post(`{"token":"secret"}`)
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusNoContent || len(cs) != 1 || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || strings.Contains(cs[0].Value, "secret") {
		t.Fatalf("sign-in: %d %+v", resp.StatusCode, cs)
	}
	withCookie := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req.AddCookie(cs[0])
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := withCookie("/")
	// The session may triage: the script asks for no token.
	if status != http.StatusOK || !strings.Contains(body, `data-auth="none"`) || strings.Contains(body, `data-testid="token-form"`) || strings.Contains(body, "secret") {
		t.Errorf("the page with a session: %d\n%s", status, body)
	}
	if status, _ := withCookie("/api/attention"); status != http.StatusOK {
		t.Errorf("the API with a session: %d", status)
	}
	if strings.Contains(newEnv(t, "").page("/"), `data-testid="token-form"`) {
		t.Errorf("auth off: a token form")
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/", nil)
	req.Host = "attacker.example"
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host: %d, want 403", resp.StatusCode)
	}
	for _, a := range []string{"/assets/page.js", "/assets/page.css"} {
		if status, b := e.get(a); status != http.StatusOK || len(b) < 100 {
			t.Errorf("%s: %d", a, status)
		}
	}
	css := e.page("/assets/page.css")
	for _, tok := range []string{"#ECFDF3", "#067647", "#B42318", "#FCA5A5", `[data-theme="dark"]`, "prefers-color-scheme: dark", "dotted"} {
		if !strings.Contains(css, tok) {
			t.Errorf("the stylesheet lacks %s", tok)
		}
	}
}

// adminTokens is auth.token_file's one admin token; nil (auth: none)
// without one.
func adminTokens(tok string) *api.Tokens {
	if tok == "" {
		return nil
	}
	return api.NewTokens([]api.Token{{Name: "admin", Secret: tok, Scopes: api.ScopeAdmin}})
}
