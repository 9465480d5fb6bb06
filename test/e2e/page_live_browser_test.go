package e2e

// Issue 28's browser tests: the operator's page updates itself from the
// daemon's stream of changes (GET /events) without a reload, holds no
// stream in a hidden tab, and pages its entity table on the server.

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"watchdog/internal/testenv"
)

// pbStreams reads watchdog_page_streams, the daemon's open page streams.
func pbStreams(t *testing.T, d *rmtDaemon) int {
	t.Helper()
	_, body := d.do(t, "GET", "/metrics", "")
	for _, line := range strings.Split(body, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "watchdog_page_streams" {
			n, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatal("no watchdog_page_streams in /metrics")
	return 0
}

// pbStreamsAre waits until the daemon holds n page streams.
func pbStreamsAre(t *testing.T, d *rmtDaemon, n int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("watchdog_page_streams %d", n), pbDeadline, func() (bool, string) {
		got := pbStreams(t, d)
		return got == n, strconv.Itoa(got)
	})
}

// pbSetHidden makes the tab read as hidden (or visible) and tells the
// page, as a browser does when a tab goes to the background.
func pbSetHidden(t *testing.T, b *pbBrowser, hidden bool) {
	t.Helper()
	state := "visible"
	if hidden {
		state = "hidden"
	}
	pbEval[bool](t, b, fmt.Sprintf(`(Object.defineProperty(document, "hidden", {configurable: true, get: () => %v}),
		Object.defineProperty(document, "visibilityState", {configurable: true, get: () => %q}),
		document.dispatchEvent(new Event("visibilitychange")), true)`, hidden, state))
}

// TestPageShowsADeathWithoutReload: a registered real process is killed
// while the page is open; its row and the queue show the death without a
// reload (a marker set in the page's JavaScript survives, and the page
// made one navigation). The time from the kill to the row changing is
// logged; the bar is 2 s, the wait's ceiling is generous.
func TestPageShowsADeathWithoutReload(t *testing.T) {
	pbChromium(t)
	// No heartbeat is sent: idle and stalled are kept far off, so the
	// only change the page can show is the death.
	d := truthStart(t, strings.NewReplacer("failure_window: 4s", "failure_window: 1h", "idle_after: 1s", "idle_after: 1h", "stalled_after: 2s", "stalled_after: 2h").Replace(truthSections))
	sleeper := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"victim","label":"victim","lifecycle":"running","pid":%d}`, sleeper.Process.Pid))
	testenv.Eventually(t, "the session judged alive", truthWait, func() (bool, string) {
		e := d.must(t, "session", "victim")
		return e.State.Health != "" && e.State.Health != "unknown", string(e.State.Health)
	})

	b := pbStart(t, d, "")
	row := `[data-testid="entity"][data-type="session"][data-id="victim"]`
	b.open(t, d, "/", row)
	before := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, row))
	pbEval[bool](t, b, `(window.wdMarker = "kept", true)`)
	pbStreamsAre(t, d, 1)

	killed := time.Now()
	if err := sleeper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.until(t, "the death on the open page", fmt.Sprintf(`(() => { const r = document.querySelector(%q); return !!r && r.innerText !== %q && /dead|aborted/i.test(r.innerText) && !!document.querySelector('[data-testid="item"]'); })()`, row, before),
		fmt.Sprintf(`document.querySelector(%q)?.innerText`, row))
	took := time.Since(killed)
	after := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, row))
	queue := pbEval[string](t, b, `document.querySelector('[data-testid="queue"]').innerText`)
	t.Logf("the death reached the open page %v after the kill (the issue's bar: 2s); the row read %q, now %q", took.Round(time.Millisecond), before, after)
	if !strings.Contains(queue, "victim") {
		t.Errorf("the queue does not name the dead session:\n%s", queue)
	}
	if got := pbEval[string](t, b, `String(window.wdMarker) + " " + performance.getEntriesByType("navigation").length`); got != "kept 1" {
		t.Fatalf("the page navigated (marker and navigations: %q): it must patch itself, not reload", got)
	}
}

// TestPagePagesItsTable: at more entities than one page holds, the page
// shows the first page, its next link shows the following rows, and the
// form's filters and order are applied by the server (the URL carries
// them; the rows follow).
func TestPagePagesItsTable(t *testing.T) {
	pbChromium(t)
	// The severity order is by severity, then the last update: idle and
	// stalled are kept far off (and the sessions have no process to
	// judge), so that no row moves across a page's cursor meanwhile.
	d := truthStart(t, strings.NewReplacer("idle_after: 1s", "idle_after: 1h", "stalled_after: 2s", "stalled_after: 2h").Replace(truthSections))
	const n = 130 // more than two pages of 50
	for i := range n {
		d.register(t, fmt.Sprintf(`{"type":"session","id":"s-%03d","lifecycle":"running"}`, i))
	}
	for i := range 3 {
		d.register(t, fmt.Sprintf(`{"type":"play","id":"p-%d","lifecycle":"queued"}`, i))
	}
	b := pbStart(t, d, "")
	ids := func() []string {
		return pbEval[[]string](t, b, `Array.from(document.querySelectorAll('[data-testid="entity"]'), r => r.dataset.type + "/" + r.dataset.id)`)
	}
	b.open(t, d, "/", `[data-testid="entities"]`)
	first := ids()
	if len(first) != 50 {
		t.Fatalf("the first page lists %d rows, want 50", len(first))
	}
	count := pbEval[string](t, b, `document.querySelector('[data-testid="entities-count"]').innerText`)
	if count != fmt.Sprintf("1–50 of %d", n+3) {
		t.Errorf("the count reads %q", count)
	}

	b.do(t, "the next page", chromedp.Click(chromedp.CSS(`[data-testid="next-page"]`)))
	b.until(t, "the second page", `location.search.includes("after=") && document.readyState === "complete" && document.querySelectorAll('[data-testid="entity"]').length > 0`, `location.href`)
	second := ids()
	if len(second) != 50 || slices.ContainsFunc(second, func(s string) bool { return slices.Contains(first, s) }) {
		t.Fatalf("the second page lists %d rows, some of the first's: %v", len(second), second)
	}
	if !pbEval[bool](t, b, `!!document.querySelector('[data-testid="first-page"]')`) {
		t.Error("the second page has no link back to the first")
	}

	// The form: sessions only, in id order.
	b.open(t, d, "/", `[data-testid="filters"]`)
	pbEval[bool](t, b, `(document.querySelector('[data-testid="filters"] select[name="type"]').value = "session",
		document.querySelector('[data-testid="order"]').value = "id",
		document.querySelector('[data-testid="filters"]').submit(), true)`)
	b.until(t, "the filtered page", `location.search.includes("order=id") && location.search.includes("type=session") && document.readyState === "complete" && document.querySelectorAll('[data-testid="entity"]').length === 50`,
		`location.href + " " + document.querySelectorAll('[data-testid="entity"]').length`)
	got := ids()
	want := make([]string, 50)
	for i := range want {
		want[i] = fmt.Sprintf("session/s-%03d", i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sessions in id order: %v", got)
	}
	// The last page by its links: the filters kept all the way.
	for range 3 {
		href := pbEval[string](t, b, `document.querySelector('[data-testid="next-page"]')?.getAttribute("href") ?? ""`)
		if href == "" {
			break
		}
		u, err := url.Parse(href)
		if err != nil || u.Query().Get("type") != "session" || u.Query().Get("order") != "id" {
			t.Fatalf("next link %q lost the filters", href)
		}
		b.open(t, d, href, `[data-testid="entities"]`)
	}
	last := ids()
	if len(last) != n-100 || last[len(last)-1] != fmt.Sprintf("session/s-%03d", n-1) {
		t.Fatalf("the last page: %v", last)
	}
}

// TestPageStreamOutlivesTheTimeoutsAndEndsAtShutdown: the built daemon's
// page stream stays open past the server's request (30 s) and response
// (60 s) timeouts on keep-alive comments alone, and SIGTERM ends it at
// once: the daemon's shutdown does not wait for it. (About 70 s: the
// timeouts are the daemon's constants.)
func TestPageStreamOutlivesTheTimeoutsAndEndsAtShutdown(t *testing.T) {
	t.Parallel()
	_, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	resp, err := http.Get(d.base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewReader(resp.Body)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	opened := time.Now()
	keepAlives := 0
	for time.Since(opened) < 65*time.Second {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended after %v (%d keep-alives): the server's timeouts ended it", time.Since(opened).Round(time.Second), keepAlives)
			}
			if strings.HasPrefix(l, ": keep-alive") {
				keepAlives++
			}
		case <-time.After(ceiling):
			t.Fatalf("nothing on the stream for %v (%d keep-alives so far)", ceiling, keepAlives)
		}
	}
	t.Logf("the stream was open %v with %d keep-alives", time.Since(opened).Round(time.Second), keepAlives)

	stopped := time.Now()
	d.signal(syscall.SIGTERM)
	for l := range lines {
		_ = l // what was in flight; the end is what counts
	}
	ended := time.Since(stopped)
	if code := d.wait(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	t.Logf("SIGTERM ended the stream after %v and the daemon after %v", ended.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	if logs := d.logs.String(); strings.Contains(logs, "http shutdown") {
		// The shutdown gave up waiting for a request: the stream held it.
		t.Fatalf("the shutdown waited for the stream until it gave up:\n%s", logs)
	}
}
