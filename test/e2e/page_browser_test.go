package e2e

// Issue 17's browser tests: the operator's page (docs/guide.md, "The operator's page") served by the
// built daemon, driven in headless Chromium through chromedp. They select
// by the page's DOM contract (data-testid, data-fingerprint, data-tone, …)
// and check what the browser shows against the JSON API. Screenshots in
// light and dark mode are written to $WATCHDOG_SCREENSHOTS, else to
// testdata/screenshots/ (ignored by git); the test logs the directory.
// Without a chromium binary the tests skip (make test installs the
// Debian package chromium); everything else fails.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
)

// pbDeadline bounds one browser wait; a slow shared machine only waits.
const pbDeadline = ceiling

// pbChromium finds a Chromium binary ($WATCHDOG_CHROMIUM first), and
// skips the test when there is none.
func pbChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WATCHDOG_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium binary on PATH (apt-get install -y chromium, or set WATCHDOG_CHROMIUM); make test installs it")
	return ""
}

// pbBrowser is one headless tab and the dialogs it has shown.
type pbBrowser struct {
	ctx context.Context
	mu  sync.Mutex
	// dialogs lists the dialogs answered, as "type: message".
	dialogs []string
	// answer is the prompt's answer (the token); confirms are accepted.
	answer string
}

// pbStart checks that the daemon serves the page (a plain GET /, so a
// missing page fails here and not as a browser timeout), then starts
// Chromium headless with a temporary profile. Every JavaScript dialog is
// answered: a prompt with token, a confirm accepted.
func pbStart(t *testing.T, d *rmtDaemon, token string) *pbBrowser {
	t.Helper()
	bin := pbChromium(t)
	resp, err := http.Get(d.base + "/")
	if err != nil {
		t.Fatalf("GET /: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %q, want 200 text/html: the daemon does not serve the operator's page\n%.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// The browser's whole session, every subtest's steps: a ceiling, not
	// a budget (each step ends when what it waits for is there).
	ctx, tcancel := context.WithTimeout(ctx, 5*ceiling)
	t.Cleanup(func() { tcancel(); cancel(); acancel() })

	b := &pbBrowser{ctx: ctx, answer: token}
	defer func() {
		// Reads need a principal: a daemon with a token shows its sign-in
		// form, which the tab passes once with the daemon's admin token
		// for a session cookie (HttpOnly: the page's script never sees
		// it); with auth.public_reads there is none to pass.
		if tok, ok := svTokens.Load(strings.TrimPrefix(d.base, "http://")); ok {
			b.signIn(t, d, tok.(string))
		}
	}()
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, string(ev.Type)+": "+ev.Message)
			b.mu.Unlock()
			p := page.HandleJavaScriptDialogParams{Accept: true}
			if ev.Type == page.DialogTypePrompt {
				p.PromptText = b.answer
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, p) //nolint:errcheck // a failure shows as the page stuck
		}
	}()
	return b
}

// signIn opens the page and, when it answers with its sign-in form,
// signs in with tok.
func (b *pbBrowser) signIn(t *testing.T, d *rmtDaemon, tok string) {
	t.Helper()
	b.do(t, "open /", chromedp.Navigate(d.base+"/"), chromedp.WaitReady("body"))
	if !pbEval[bool](t, b, pbVisible(`[data-testid="login-form"]`)) {
		return
	}
	b.do(t, "sign in", chromedp.SendKeys(chromedp.CSS(`[data-testid="login-input"]`), tok), chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`)))
	b.until(t, "signed in", `!document.querySelector('[data-testid="login-form"]') && !!document.querySelector('[data-testid="generated-at"]')`, `document.body.innerText`)
	if pbEval[bool](t, b, `document.cookie.includes("watchdog_session")`) {
		t.Errorf("the session cookie is readable by the page's script: want HttpOnly")
	}
}

// dialogsOf counts the dialogs of one type so far.
func (b *pbBrowser) dialogsOf(typ page.DialogType) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, d := range b.dialogs {
		if strings.HasPrefix(d, string(typ)+":") {
			n++
		}
	}
	return n
}

// do runs actions in the tab.
func (b *pbBrowser) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage text:\n%s", what, err, b.text())
	}
}

// text is the page's visible text, for failure messages.
func (b *pbBrowser) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : "(no body)"`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 3000 {
		s = s[:3000] + "…"
	}
	return s
}

// eval evaluates a JavaScript expression into T, failing the test on an
// error.
func pbEval[T any](t *testing.T, b *pbBrowser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v\npage text:\n%s", js, err, b.text())
	}
	return v
}

// until waits for a JavaScript expression to be true; detail (another
// expression) says what the page shows meanwhile.
func (b *pbBrowser) until(t *testing.T, what, cond, detail string) {
	t.Helper()
	testenv.Eventually(t, what, pbDeadline, func() (bool, string) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err != nil {
			return false, err.Error()
		}
		d, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(`+detail+`)`))
		if err != nil {
			d = err.Error()
		}
		return ok, d
	})
}

// open navigates to the daemon's path and waits for sel to be visible.
func (b *pbBrowser) open(t *testing.T, d *rmtDaemon, path, sel string) {
	t.Helper()
	b.do(t, "open "+path, chromedp.Navigate(d.base+path), chromedp.WaitVisible(chromedp.CSS(sel)))
}

// pbWrite sends a write with the daemon's token when auth is on.
func pbWrite(t *testing.T, d *rmtDaemon, path, body string) {
	t.Helper()
	req, err := http.NewRequest("POST", d.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+rmtToken)
	}
	resp, err := (&http.Client{Timeout: ceiling}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s %s: %d %s", path, body, resp.StatusCode, b)
	}
}

// pbScreenshotDir is where the screenshots go: $WATCHDOG_SCREENSHOTS,
// else testdata/screenshots/ beside this file (ignored by git).
func pbScreenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WATCHDOG_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		t.Fatal(err)
	}
	return abs
}

// setTheme forces data-theme on <html> ("" removes it).
func (b *pbBrowser) setTheme(t *testing.T, theme string) {
	t.Helper()
	js := `document.documentElement.removeAttribute("data-theme")`
	if theme != "" {
		js = fmt.Sprintf(`document.documentElement.setAttribute("data-theme", %q)`, theme)
	}
	pbEval[chromedp.Void](t, b, js)
	// Two frames: the style recalculated and painted.
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("wait for a frame: %v", err)
	}
}

// screenshot saves the whole page as name.png under dir.
func (b *pbBrowser) screenshot(t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
}

// clusterSel is the queue's cluster of one reason code.
func clusterSel(code string) string {
	return fmt.Sprintf(`[data-testid="queue"] [data-testid="cluster"][data-cluster-id=%q]`, attention.ClusterID(state.ReasonCode(code)))
}

// itemSel is the queue's item with fingerprint fp.
func itemSel(fp string) string {
	return fmt.Sprintf(`[data-testid="queue"] [data-testid="item"][data-fingerprint=%q]`, fp)
}

// pbVisible is a JavaScript expression: the element matching sel exists
// and is rendered (a hidden or collapsed element has no client rects).
func pbVisible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden"; })()`, sel)
}

// pbCountVisible is a JavaScript expression counting the rendered
// elements matching sel.
func pbCountVisible(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== "hidden").length`, sel)
}

// TestPageQueueClusterSnoozeDismiss: with auth on, six sessions failed for
// the same reason are one collapsed cluster of six in the critical
// section; expanded, one item snoozed and another dismissed (after a
// confirm) through the page's buttons leave four, and the API agrees,
// showing the two again only with include_dismissed. The token is asked
// in a form of the page naming its file, once for the tab, also across a
// reload; a wrong one gives one message.
func TestPageQueueClusterSnoozeDismiss(t *testing.T) {
	pbChromium(t)
	// Reads public, writes behind the token: the per-tab token form.
	d := rmtStartPublic(t)
	const code = "run.failed.exit_nonzero"
	fp := func(i int) string {
		return attention.Fingerprint("session", fmt.Sprintf("f-%d", i), state.ReasonCode(code))
	}
	for i := 1; i <= 6; i++ {
		pbWrite(t, d, "/api/v1/entities", fmt.Sprintf(`{"type":"session","id":"f-%d","label":"job %d","lifecycle":"running"}`, i, i))
		pbWrite(t, d, fmt.Sprintf("/api/v1/entities/session/f-%d/transitions", i), fmt.Sprintf(`{"to":"failed","reason":{"code":%q,"message":"exit 3"}}`, code))
	}
	clusterOf := func(q attention.Queue) (n int) {
		for _, it := range q.Items {
			if it.ClusterID == attention.ClusterID(state.ReasonCode(code)) {
				n++
			}
		}
		return n
	}
	if n := clusterOf(d.queue(t, "")); n != 6 {
		t.Fatalf("the API's queue has %d items of %s, want 6", n, code)
	}

	b := pbStart(t, d, rmtToken)
	cluster := clusterSel(code)
	b.open(t, d, "/", `[data-testid="queue"]`)
	b.until(t, "the cluster of six", fmt.Sprintf(`document.querySelectorAll(%q).length === 1 && document.querySelector(%q).dataset.size === "6"`, cluster, cluster),
		`document.querySelector('[data-testid="queue"]').innerText`)
	if n := pbEval[int](t, b, fmt.Sprintf(`document.querySelectorAll('[data-testid="severity-critical"] [data-testid="cluster"][data-cluster-id=%q]').length`, attention.ClusterID(state.ReasonCode(code)))); n != 1 {
		t.Errorf("the cluster is not in the critical section (%d there)", n)
	}
	toggle := cluster + ` [data-testid="cluster-toggle"]`
	if txt := strings.TrimSpace(pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, toggle))); !regexp.MustCompile(`^(?:[▶▸►]\s*)?6\s*[×x]\s*\S`).MatchString(txt) { // a decorative caret may lead (aria-hidden)
		t.Errorf("the cluster's toggle reads %q, want \"6 × <summary>\"", txt)
	}
	if n := pbEval[int](t, b, pbCountVisible(cluster+` [data-testid="item"]`)); n != 0 {
		t.Errorf("the collapsed cluster shows %d items, want none until toggled", n)
	}
	b.screenshot(t, pbScreenshotDir(t), "queue-collapsed")

	// expand opens the cluster unless it is open (a re-render may close it).
	expand := func(fp string) {
		t.Helper()
		if !pbEval[bool](t, b, pbVisible(itemSel(fp))) {
			b.do(t, "toggle the cluster", chromedp.Click(chromedp.CSS(toggle)))
		}
		b.until(t, "the item "+fp+" shown", pbVisible(itemSel(fp)), `document.querySelector('[data-testid="queue"]').innerText`)
	}
	expand(fp(1))
	if n := pbEval[int](t, b, pbCountVisible(cluster+` [data-testid="item"]`)); n != 6 {
		t.Errorf("the expanded cluster shows %d items, want 6", n)
	}
	first := itemSel(fp(1))
	for _, sel := range []string{`[data-testid="open"]`, `[data-testid="snooze"]`, `[data-testid="dismiss"]`} {
		if !pbEval[bool](t, b, pbVisible(first+" "+sel)) {
			t.Errorf("item %s has no visible %s", fp(1), sel)
		}
	}
	row := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, first))
	if !strings.Contains(row, "job 1") && !strings.Contains(row, "f-1") || !regexp.MustCompile(`\d+[smhd] ago|just now`).MatchString(row) {
		t.Errorf("item row %q lacks the entity's label or its age (\"12m ago\")", row)
	}
	if href := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).getAttribute("href")`, first+` [data-testid="open"]`)); !strings.HasSuffix(href, "/entities/session/f-1") {
		t.Errorf("Open links to %q, want /entities/session/f-1", href)
	}

	// Snooze 1d: the first write asks for the token, in a form of the
	// page that names the file it is in (no window.prompt); a wrong token
	// gives one message there and nothing else, the right one sends the
	// snooze.
	before := time.Now()
	form, input, submit, tokenErr := `[data-testid="token-form"]`, `[data-testid="token-input"]`, `[data-testid="token-submit"]`, `[data-testid="token-error"]`
	if pbEval[bool](t, b, pbVisible(form)) {
		t.Errorf("the token form shows before any write")
	}
	b.do(t, "snooze "+fp(1), chromedp.Click(chromedp.CSS(first+` [data-testid="snooze"]`)))
	b.until(t, "the token form", pbVisible(form), `document.body.innerText`)
	if file := pbEval[string](t, b, `document.querySelector('[data-testid="token-file"]')?.innerText ?? ""`); file != d.token {
		t.Errorf("the token form names %q, want the token file %s", file, d.token)
	}
	b.do(t, "a wrong token", chromedp.SendKeys(chromedp.CSS(input), "not-the-token"), chromedp.Click(chromedp.CSS(submit)))
	b.until(t, "one message for the wrong token", pbVisible(tokenErr)+" && "+pbVisible(form), `document.body.innerText`)
	msg := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, tokenErr))
	if !strings.Contains(msg, "refused") || !strings.Contains(msg, d.token) {
		t.Errorf("the wrong token's message %q does not say it was refused and where the token is", msg)
	}
	if st := pbEval[string](t, b, `document.querySelector('[data-testid="status"]').innerText`); st != "" {
		t.Errorf("a wrong token also shows %q in the header: want one message", st)
	}
	if n := pbEval[int](t, b, `document.querySelectorAll('[data-testid="token-error"]:not([hidden])').length`); n != 1 {
		t.Errorf("%d token messages, want 1", n)
	}
	b.screenshot(t, pbScreenshotDir(t), "token-refused")
	b.do(t, "the right token", chromedp.SendKeys(chromedp.CSS(input), rmtToken), chromedp.Click(chromedp.CSS(submit)))
	b.until(t, "the snoozed item gone and the cluster of five",
		fmt.Sprintf(`!document.querySelector(%q) && document.querySelector(%q)?.dataset.size === "5"`, first, cluster),
		`document.querySelector('[data-testid="queue"]').innerText`)
	if pbEval[bool](t, b, pbVisible(form)) {
		t.Errorf("the token form stays after the right token")
	}
	if n := b.dialogsOf(page.DialogTypePrompt); n != 0 {
		t.Errorf("%d prompt dialogs, want none: the token is asked in the page (%v)", n, b.dialogs)
	}
	if got := pbEval[string](t, b, `sessionStorage.getItem("watchdog-token") || ""`); got != rmtToken {
		t.Errorf("sessionStorage watchdog-token = %q, want the token", got)
	}
	if n := clusterOf(d.queue(t, "")); n != 5 {
		t.Errorf("after the snooze the API's queue has %d items of the cluster, want 5", n)
	}
	if it, ok := item(d.queue(t, "include_dismissed=true"), fp(1)); !ok || !it.Dismissed ||
		it.SnoozedUntil.Before(before.Add(23*time.Hour)) || it.SnoozedUntil.After(time.Now().Add(25*time.Hour)) {
		t.Errorf("the snoozed item with include_dismissed: %+v (found %v), want dismissed until about a day from now", it, ok)
	}

	// Dismiss, behind a confirm.
	expand(fp(2))
	b.do(t, "dismiss "+fp(2), chromedp.Click(chromedp.CSS(itemSel(fp(2))+` [data-testid="dismiss"]`)))
	b.until(t, "the dismissed item gone and the cluster of four",
		fmt.Sprintf(`!document.querySelector(%q) && document.querySelector(%q)?.dataset.size === "4"`, itemSel(fp(2)), cluster),
		`document.querySelector('[data-testid="queue"]').innerText`)
	if n := b.dialogsOf(page.DialogTypeConfirm); n != 1 {
		t.Errorf("%d confirms after the dismiss, want 1 (%v)", n, b.dialogs)
	}
	q := d.queue(t, "")
	if n := clusterOf(q); n != 4 {
		t.Errorf("after the dismiss the API's queue has %d items of the cluster, want 4", n)
	}
	for _, f := range []string{fp(1), fp(2)} {
		if _, ok := item(q, f); ok {
			t.Errorf("%s is still in the API's queue", f)
		}
	}
	if it, ok := item(d.queue(t, "include_dismissed=true"), fp(2)); !ok || !it.Dismissed || !it.SnoozedUntil.IsZero() {
		t.Errorf("the dismissed item with include_dismissed: %+v (found %v), want dismissed without a snooze end", it, ok)
	}
	expand(fp(3))
	if n := pbEval[int](t, b, pbCountVisible(cluster+` [data-testid="item"]`)); n != 4 {
		t.Errorf("the page shows %d items of the cluster, want 4", n)
	}
	b.screenshot(t, pbScreenshotDir(t), "queue-after-actions")

	// The token is asked once per tab: a reload and another snooze ask
	// nothing more.
	b.open(t, d, "/", clusterSel(code))
	expand(fp(3))
	b.do(t, "snooze "+fp(3), chromedp.Click(chromedp.CSS(itemSel(fp(3))+` [data-testid="snooze"]`)))
	b.until(t, "the cluster of three", fmt.Sprintf(`document.querySelector(%q)?.dataset.size === "3"`, cluster),
		`document.querySelector('[data-testid="queue"]').innerText`)
	if n := b.dialogsOf(page.DialogTypePrompt); n != 0 || pbEval[bool](t, b, pbVisible(form)) {
		t.Errorf("the token asked again after a reload and a second write (%d prompts, %v)", n, b.dialogs)
	}
	if n := clusterOf(d.queue(t, "")); n != 3 {
		t.Errorf("after the second snooze the API's queue has %d items of the cluster, want 3", n)
	}
}

// TestPageEntities: the entity table, the entity page and the legacy chip
// against a daemon with short thresholds. A session whose heartbeat file
// is a minute old reads "Running · Stalled" with the pill pair of the
// compound state (a blue Running, a red Stalled, SVG icons), in the
// table and on its page (with its reasons, their moments as date-times,
// and timeline) and in the critical section of the queue; hosts are
// shown by name with the id on hover; two legacy entities are dotted pills and
// a chip that says "2 legacy entities", as watchdog_legacy_entities does;
// filters narrow the table; the page fits a phone's width. Screenshots in
// light and dark mode are saved, and every rendered pill's text and
// background, in both themes, are a pair of the Session Status Vocabulary design's tokens with a
// contrast ratio of at least 4.5.
func TestPageEntities(t *testing.T) {
	pbChromium(t)
	d := truthStart(t, strings.Replace(truthSections, "failure_window: 4s", "failure_window: 1h", 1))
	hb := filepath.Join(t.TempDir(), "st-1.hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	ageHeartbeat(t, hb, old)
	sleeper := testenv.Sleep(t)
	d.register(t, fmt.Sprintf(`{"type":"session","id":"st-1","label":"stalled one","lifecycle":"running","pid":%d,"heartbeat_file":%q}`, sleeper.Process.Pid, hb))
	d.register(t, `{"type":"session","id":"done-1","lifecycle":"running","host_id":"host-b"}`)
	if code, body := d.transition(t, "session", "done-1", `{"to":"completed"}`); code != http.StatusOK {
		t.Fatalf("succeed done-1: %d %s", code, body)
	}
	d.register(t, `{"type":"play","id":"p-q","lifecycle":"queued","host_id":"host-b"}`)
	d.register(t, `{"type":"play","id":"old-1","lifecycle":null}`)
	d.register(t, `{"type":"session","id":"old-2","lifecycle":null}`)
	testenv.Eventually(t, "the session judged stalled", truthWait, func() (bool, string) {
		ageHeartbeat(t, hb, old)
		e := d.must(t, "session", "st-1")
		return e.Display == "Running · Stalled", e.Display
	})
	legacy := 0
	_, metrics := d.do(t, "GET", "/metrics", "")
	for _, line := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(line, "watchdog_legacy_entities") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			legacy += int(v)
		}
	}
	if legacy != 2 {
		t.Fatalf("watchdog_legacy_entities = %d, want 2", legacy)
	}

	b := pbStart(t, d, "")
	shots := pbScreenshotDir(t)
	t.Logf("screenshots are written to %s", shots)
	row := `[data-testid="entities"] [data-testid="entity"][data-type="session"][data-id="st-1"]`
	b.open(t, d, "/", `[data-testid="entities"]`)
	b.until(t, "the stalled session's row", fmt.Sprintf(`document.querySelector(%q)?.querySelector('[data-testid="chain"]')?.innerText.trim() === "Running · Stalled"`, row),
		fmt.Sprintf(`document.querySelector(%q)?.innerText ?? document.querySelector('[data-testid="entities"]').innerText`, row))

	t.Run("stalled", func(t *testing.T) {
		// The compound state (the Session Status Vocabulary design): the
		// lifecycle's pill in its own (running) colour and the stall's
		// pill beside it, each with an SVG icon that draws.
		if got := pbPillsOf(t, b, row); got != "lifecycle info Running svg | health danger Stalled svg" {
			t.Errorf("the stalled session's pills: %q, want a blue Running and a red Stalled, each with a drawn SVG icon", got)
		}
		lc := pbEval[string](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).color`, row+` [data-testid="pill"][data-dimension="lifecycle"]`))
		hl := pbEval[string](t, b, fmt.Sprintf(`getComputedStyle(document.querySelector(%q)).color`, row+` [data-testid="pill"][data-dimension="health"]`))
		if lc == hl {
			t.Errorf("the lifecycle and health pills share the colour %s", lc)
		}
		cells := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, row))
		for _, want := range []string{strconv.Itoa(sleeper.Process.Pid)} {
			if !strings.Contains(cells, want) {
				t.Errorf("the stalled session's row %q lacks %q", cells, want)
			}
		}
		fp := attention.Fingerprint("session", "st-1", state.ReasonCode("run.health.stalled"))
		b.until(t, "the stall in the queue's critical section",
			fmt.Sprintf(`!!document.querySelector('[data-testid="severity-critical"] [data-testid="item"][data-fingerprint=%q]')`, fp),
			`document.querySelector('[data-testid="queue"]').innerText`)
	})

	t.Run("host by name", func(t *testing.T) {
		// The daemon recorded its machine's hostname at its start: a host
		// is shown by it, its id on hover; a host no daemon named, by id.
		name, err := os.Hostname()
		if err != nil || name == "" {
			t.Skipf("no hostname: %v", err)
		}
		hostID := d.must(t, "session", "st-1").HostID
		if hostID == "" {
			t.Fatalf("st-1 has no host id")
		}
		cell := func(id string) string {
			return pbEval[string](t, b, fmt.Sprintf(`(() => { const c = document.querySelector('[data-testid="entity"][data-id=%q] [data-testid="host"]'); return c ? c.innerText.trim() + "|" + c.title : "(no cell)"; })()`, id))
		}
		if got, want := cell("st-1"), name+"|"+hostID; got != want {
			t.Errorf("st-1's host cell %q, want %q (name, then the id on hover)", got, want)
		}
		if got := cell("done-1"); got != "host-b|host-b" {
			t.Errorf("done-1's host cell %q, want host-b by its id", got)
		}
	})

	t.Run("legacy chip", func(t *testing.T) {
		chip := strings.TrimSpace(pbEval[string](t, b, `document.querySelector('[data-testid="legacy-chip"]')?.innerText ?? "(no chip)"`))
		if !regexp.MustCompile(`^2 legacy entit`).MatchString(chip) {
			t.Errorf("the legacy chip reads %q, want \"2 legacy entities\" (watchdog_legacy_entities = %d)", chip, legacy)
		}
		for _, ref := range [][2]string{{"play", "old-1"}, {"session", "old-2"}} {
			sel := fmt.Sprintf(`[data-testid="entity"][data-type=%q][data-id=%q] [data-testid="pill"]`, ref[0], ref[1])
			got := pbEval[string](t, b, fmt.Sprintf(`(() => { const p = document.querySelector(%q); return p ? p.dataset.tone + " " + getComputedStyle(p).borderTopStyle : "(no pill)"; })()`, sel))
			if got != "legacy dotted" {
				t.Errorf("%s/%s's pill: %q, want tone legacy with a dotted border", ref[0], ref[1], got)
			}
		}
	})

	t.Run("filters", func(t *testing.T) {
		defer b.open(t, d, "/", `[data-testid="entities"]`)
		rows := func() string {
			return pbEval[string](t, b, `[...document.querySelectorAll('[data-testid="entities"] [data-testid="entity"]')].map(r => r.dataset.type + "/" + r.dataset.id).sort().join(" ")`)
		}
		for _, c := range []struct{ query, want string }{
			{"?type=play", "play/old-1 play/p-q"},
			{"?type=session&severity=critical", "session/st-1"},
			{"?host=host-b", "play/p-q session/done-1"},
		} {
			b.open(t, d, "/"+c.query, `[data-testid="entities"]`)
			if got := rows(); got != c.want {
				t.Errorf("GET /%s shows %q, want %q", c.query, got, c.want)
			}
		}
		if n := pbEval[int](t, b, `document.querySelectorAll("form").length`); n == 0 {
			t.Errorf("no filter form on the page")
		}
	})

	t.Run("entity page", func(t *testing.T) {
		defer b.open(t, d, "/", `[data-testid="entities"]`)
		b.do(t, "follow the row to the entity page", chromedp.Navigate(d.base+"/entities/session/st-1"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="reasons"]`)))
		if chain := strings.TrimSpace(pbEval[string](t, b, `document.querySelector('[data-testid="chain"]')?.innerText ?? ""`)); chain != "Running · Stalled" {
			t.Errorf("the entity page's chain reads %q", chain)
		}
		reasons := pbEval[string](t, b, `document.querySelector('[data-testid="reasons"]').innerText`)
		if !strings.Contains(reasons, "stalled") {
			t.Errorf("the reasons section lacks the stall: %q", reasons)
		}
		if got := pbPillsOf(t, b, `[data-testid="entity-page"]`); got != "lifecycle info Running svg | health danger Stalled svg" {
			t.Errorf("the entity page's pills: %q", got)
		}
		// The evidence's moments are date-times with their age, in the
		// browser's zone: never the raw Unix seconds the detail writes.
		if n := pbEval[int](t, b, `document.querySelectorAll('[data-testid="evidence"] time[data-testid="evidence-time"]').length`); n == 0 {
			t.Errorf("no moment in the evidence is a <time>: %q", reasons)
		}
		if ev := pbEval[string](t, b, `[...document.querySelectorAll('[data-testid="evidence"]')].map(e => e.innerText).join("\n")`); regexp.MustCompile(`\b\d{10}\.\d{2}\b`).MatchString(ev) {
			t.Errorf("the evidence shows raw Unix seconds: %q", ev)
		} else if !regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \((\d+[smhd] ago|just now)\)`).MatchString(ev) {
			t.Errorf("the evidence's moments are not local date-times (year first, with the zone) with their age: %q", ev)
		}
		if n := pbEval[int](t, b, `document.querySelectorAll('[data-testid="timeline"] li').length`); n == 0 {
			t.Errorf("the timeline has no transitions")
		}
		for _, theme := range []string{"light", "dark"} {
			b.setTheme(t, theme)
			b.screenshot(t, shots, "entity-"+theme)
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		for _, theme := range []string{"light", "dark"} {
			b.setTheme(t, theme)
			b.screenshot(t, shots, "page-"+theme)
		}
		b.setTheme(t, "")
	})

	t.Run("contrast", func(t *testing.T) {
		seed := map[string][][2]string{ // theme → (background, text) pairs of the Session Status Vocabulary design
			"light": {{"#ECFDF3", "#067647"}, {"#EFF6FF", "#175CD3"}, {"#FEF3F2", "#B42318"}, {"#FFFAEB", "#B54708"}, {"#FFF7ED", "#C2410C"}, {"#F3F4F6", "#374151"}, {"#F5F3FF", "#6D28D9"}},
			"dark":  {{"#062C1B", "#86EFAC"}, {"#0B1E3D", "#93C5FD"}, {"#3B0A0A", "#FCA5A5"}, {"#3A2604", "#FCD34D"}, {"#331C05", "#FDBA74"}, {"#1F2937", "#D1D5DB"}, {"#23153E", "#C4B5FD"}},
		}
		byTheme := map[string]map[string]string{}
		for _, theme := range []string{"light", "dark"} {
			b.setTheme(t, theme)
			pills := pbPills(t, b)
			if len(pills) == 0 {
				t.Fatalf("%s: no pills on the page", theme)
			}
			byTheme[theme] = map[string]string{}
			tones := map[string]bool{}
			for _, p := range pills {
				tones[p.Tone] = true
				bg, fg := p.colours()
				r := contrast(fg, bg)
				pair := [2]string{hexOf(bg), hexOf(fg)}
				byTheme[theme][p.Tone] = pair[0] + "/" + pair[1]
				t.Logf("%s %-8s %q: background %s text %s, contrast %.2f", theme, p.Tone, p.Text, pair[0], pair[1], r)
				if r < 4.5 {
					t.Errorf("%s: the %s pill %q has contrast %.2f, want at least 4.5", theme, p.Tone, p.Text, r)
				}
				found := false
				for _, s := range seed[theme] {
					found = found || strings.EqualFold(s[0], pair[0]) && strings.EqualFold(s[1], pair[1])
				}
				if !found {
					t.Errorf("%s: the %s pill's colours %s on %s are not a pair of the status vocabulary's %s tokens", theme, p.Tone, pair[1], pair[0], theme)
				}
			}
			for _, want := range []string{"danger", "success", "legacy"} {
				if !tones[want] {
					t.Errorf("%s: no %s pill rendered (tones %v)", theme, want, tones)
				}
			}
		}
		if fmt.Sprint(byTheme["light"]) == fmt.Sprint(byTheme["dark"]) {
			t.Errorf("the pills look the same in light and dark mode: %v", byTheme["light"])
		}
		// With no data-theme, prefers-color-scheme: dark is the dark theme.
		b.setTheme(t, "")
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		}); err != nil {
			t.Fatal(err)
		}
		b.setTheme(t, "")
		got := map[string]string{}
		for _, p := range pbPills(t, b) {
			bg, fg := p.colours()
			got[p.Tone] = hexOf(bg) + "/" + hexOf(fg)
		}
		if fmt.Sprint(got) != fmt.Sprint(byTheme["dark"]) {
			t.Errorf("prefers-color-scheme: dark renders %v, data-theme=dark %v", got, byTheme["dark"])
		}
		b.screenshot(t, shots, "page-prefers-dark")
		if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("live updates", func(t *testing.T) {
		// The page follows the daemon's stream of changes while it is
		// seen, and holds no stream while the tab is hidden:
		// document.hidden is forced here and visibilitychange sent, as a
		// browser does for a background tab. Shown again, it reopens the
		// stream and catches up with one fetch.
		b.open(t, d, "/", `[data-testid="entities"]`)
		pbEval[bool](t, b, `(window.wdMarker = "kept", true)`)
		row := func(id string) string {
			return fmt.Sprintf(`document.querySelectorAll('[data-testid="entity"][data-id=%q]').length === 1`, id)
		}
		pbStreamsAre(t, d, 1)
		pbSetHidden(t, b, true)
		pbStreamsAre(t, d, 0)
		pbWrite(t, d, "/api/v1/entities", `{"type":"session","id":"poll-hidden","lifecycle":"running"}`)
		d.must(t, "session", "poll-hidden")
		pbStreamsAre(t, d, 0) // still none: nothing could tell the hidden tab
		if pbEval[bool](t, b, row("poll-hidden")) {
			t.Fatal("a hidden tab refreshed the page")
		}
		pbSetHidden(t, b, false)
		b.until(t, "the page caught up once seen again", row("poll-hidden"), `document.querySelector('[data-testid="entities"]').innerText`)
		pbStreamsAre(t, d, 1)
		pbWrite(t, d, "/api/v1/entities", `{"type":"session","id":"poll-seen","lifecycle":"running"}`)
		b.until(t, "the stream brings a new entity", row("poll-seen"), `document.querySelector('[data-testid="entities"]').innerText`)
		if got := pbEval[string](t, b, `String(window.wdMarker) + " " + performance.getEntriesByType("navigation").length`); got != "kept 1" {
			t.Fatalf("the page navigated (marker and navigations: %q): it must patch itself, not reload", got)
		}
	})

	t.Run("phone", func(t *testing.T) {
		if n := pbEval[int](t, b, `document.querySelectorAll('meta[name="viewport"]').length`); n != 1 {
			t.Errorf("%d viewport meta tags, want 1", n)
		}
		b.do(t, "a phone's viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch))
		b.open(t, d, "/", `[data-testid="entities"]`)
		// The document itself must not scroll sideways; a table may scroll
		// inside its own box.
		if w := pbEval[[]int](t, b, `[document.documentElement.scrollWidth, window.innerWidth]`); w[0] > w[1] {
			t.Errorf("on a 390px wide phone the page is %dpx wide", w[0])
		}
		if got := pbPillsOf(t, b, row); got != "lifecycle info Running svg | health danger Stalled svg" {
			t.Errorf("on a phone, the stalled session's pills: %q", got)
		}
		for _, theme := range []string{"light", "dark"} {
			b.setTheme(t, theme)
			b.screenshot(t, shots, "phone-"+theme)
		}
		b.open(t, d, "/entities/session/st-1", `[data-testid="reasons"]`)
		for _, theme := range []string{"light", "dark"} {
			b.setTheme(t, theme)
			b.screenshot(t, shots, "phone-entity-"+theme)
		}
		b.setTheme(t, "")
		b.do(t, "back to the desktop viewport", chromedp.ResetViewport())
	})
}

// pbPillsOf reads the pills under root as "dimension tone text icon"
// joined by " | ", where icon is "svg" for an inline SVG icon that draws
// (a box of its own, a painted stroke) and "no-svg" otherwise.
func pbPillsOf(t *testing.T, b *pbBrowser, root string) string {
	t.Helper()
	return pbEval[string](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(p => {
		const svg = p.querySelector("svg.pill-icon");
		const r = svg ? svg.getBoundingClientRect() : null;
		const drawn = !!svg && r.width > 0 && r.height > 0 && svg.querySelector("path, circle, rect") !== null && getComputedStyle(svg).stroke !== "none";
		return p.dataset.dimension + " " + p.dataset.tone + " " + p.innerText.trim() + " " + (drawn ? "svg" : "no-svg");
	}).join(" | ")`, root+` [data-testid="pill"]`))
}

// pbPill is one rendered pill: its tone and text, its colours, and the
// background colours of its ancestors up to <html>, as
// getComputedStyle reports them.
type pbPill struct {
	Tone, Text, Color string
	Backgrounds       []string
}

// pbPills reads every pill on the page.
func pbPills(t *testing.T, b *pbBrowser) []pbPill {
	t.Helper()
	raw := pbEval[[]byte](t, b, `[...document.querySelectorAll('[data-testid="pill"]')].map(p => {
		const bgs = [];
		for (let e = p; e; e = e.parentElement) bgs.push(getComputedStyle(e).backgroundColor);
		return {Tone: p.dataset.tone || "", Text: p.innerText.trim(), Color: getComputedStyle(p).color, Backgrounds: bgs};
	})`)
	var out []pbPill
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("pills: %v (%s)", err, raw)
	}
	return out
}

// colours are the pill's opaque background (its own, composited over its
// ancestors' and the white canvas) and its text colour composited over
// that.
func (p pbPill) colours() (bg, fg [3]float64) {
	bg = [3]float64{255, 255, 255}
	for i := len(p.Backgrounds) - 1; i >= 0; i-- {
		bg = over(parseCSSColour(p.Backgrounds[i]), bg)
	}
	return bg, over(parseCSSColour(p.Color), bg)
}

// rgba is a CSS colour: red, green, blue (0–255) and alpha (0–1).
type rgba [4]float64

var cssColourRe = regexp.MustCompile(`^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:\s*[,/]\s*([\d.]+%?))?\s*\)$`)

// parseCSSColour reads the rgb()/rgba() form getComputedStyle reports;
// anything else (a colour() function, "transparent") is transparent.
func parseCSSColour(s string) rgba {
	s = strings.TrimSpace(s)
	m := cssColourRe.FindStringSubmatch(s)
	if m == nil {
		return rgba{}
	}
	var c rgba
	for i := 0; i < 3; i++ {
		c[i], _ = strconv.ParseFloat(m[i+1], 64)
	}
	c[3] = 1
	if a := m[4]; a != "" {
		if strings.HasSuffix(a, "%") {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(a, "%"), 64)
			c[3] = v / 100
		} else {
			c[3], _ = strconv.ParseFloat(a, 64)
		}
	}
	return c
}

// over composites c over the opaque colour under.
func over(c rgba, under [3]float64) [3]float64 {
	var out [3]float64
	for i := range out {
		out[i] = c[i]*c[3] + under[i]*(1-c[3])
	}
	return out
}

// hexOf is an opaque colour as #RRGGBB.
func hexOf(c [3]float64) string {
	return fmt.Sprintf("#%02X%02X%02X", int(math.Round(c[0])), int(math.Round(c[1])), int(math.Round(c[2])))
}

// contrast is the WCAG 2 contrast ratio of two opaque colours.
func contrast(a, b [3]float64) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// luminance is WCAG 2's relative luminance.
func luminance(c [3]float64) float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.03928 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[0]) + 0.7152*lin(c[1]) + 0.0722*lin(c[2])
}

// TestContrastOfSeedTokens checks the contrast arithmetic against seed
// 001's table (which rounds to one decimal) without a browser.
func TestContrastOfSeedTokens(t *testing.T) {
	for _, c := range []struct {
		bg, fg string
		want   float64
	}{
		{"#ECFDF3", "#067647", 5.4}, {"#FEF3F2", "#B42318", 6.0}, {"#F3F4F6", "#374151", 9.4},
		{"#062C1B", "#86EFAC", 10.8}, {"#3B0A0A", "#FCA5A5", 9.0}, {"#1F2937", "#D1D5DB", 10.0},
	} {
		bg, fg := parseHex(t, c.bg), parseHex(t, c.fg)
		if got := contrast(fg, bg); math.Abs(got-c.want) > 0.35 {
			t.Errorf("contrast %s on %s = %.2f, seed says %.1f", c.fg, c.bg, got, c.want)
		}
		if got := over(parseCSSColour(fmt.Sprintf("rgba(%v, %v, %v, 0.5)", fg[0], fg[1], fg[2])), bg); hexOf(got) == hexOf(fg) {
			t.Errorf("a half-transparent text colour is not composited")
		}
	}
}

func parseHex(t *testing.T, s string) [3]float64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return [3]float64{float64(v >> 16 & 0xff), float64(v >> 8 & 0xff), float64(v & 0xff)}
}
