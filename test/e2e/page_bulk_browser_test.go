package e2e

// Browser tests of bulk triage on the operator's page (ADR-0049): a
// cluster snoozed whole for a chosen duration in one click, the entity
// page's own Snooze and Dismiss, and the runbook's "what to do" line and
// link beside each.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"watchdog/attention"
	"watchdog/internal/testenv"
	"watchdog/state"
	"watchdog/store"
)

// TestPageBulkSnoozeCluster: six sessions failed for one reason are one
// cluster; 4h chosen beside its Snooze, one click snoozes all six (no
// confirmation, only the tab's token form), the API shows each snoozed
// about four hours, and the triage log holds one entry per item, by the
// operator, in one batch. The cluster says what to do and links the
// runbook's section, which the daemon serves; the entity page of a
// snoozed session says so and dismisses it.
func TestPageBulkSnoozeCluster(t *testing.T) {
	pbChromium(t)
	d := rmtStartPublic(t)
	const code = "run.failed.exit_nonzero"
	var fps []string
	for i := 1; i <= 6; i++ {
		pbWrite(t, d, "/api/v1/entities", fmt.Sprintf(`{"type":"session","id":"f-%d","label":"job %d","lifecycle":"running"}`, i, i))
		pbWrite(t, d, fmt.Sprintf("/api/v1/entities/session/f-%d/transitions", i), fmt.Sprintf(`{"to":"failed","reason":{"code":%q,"message":"exit 3"}}`, code))
		fps = append(fps, attention.Fingerprint("session", fmt.Sprintf("f-%d", i), state.ReasonCode(code)))
	}
	// A session judged between its registration and its failure may show
	// an item of its running state for a moment: the queue settles on the
	// six failures.
	testenv.Eventually(t, "the six failures in the API's queue", ceiling, func() (bool, string) {
		q := d.queue(t, "")
		codes := make([]string, 0, len(q.Items))
		for _, it := range q.Items {
			codes = append(codes, string(it.Reason.Code))
		}
		return q.Total == 6, fmt.Sprint(q.Total, codes)
	})

	b := pbStart(t, d, rmtToken)
	cluster := clusterSel(code)
	b.open(t, d, "/", cluster)
	queueText := `document.querySelector('[data-testid="queue"]').innerText`
	b.until(t, "the cluster of six", fmt.Sprintf(`document.querySelector(%q)?.dataset.size === "6"`, cluster), queueText)

	// What to do, without unfolding the cluster, and the runbook link.
	todo := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q)?.innerText || ""`, cluster+` [data-testid="todo"]`))
	do := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q)?.innerText || ""`, cluster+` [data-testid="todo-text"]`))
	if !strings.Contains(todo, "What to do:") || !strings.HasPrefix(do, "Hand it to the work's owner") {
		t.Errorf("the cluster's what-to-do line reads %q", todo)
	}
	href := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q)?.getAttribute("href") || ""`, cluster+` [data-testid="runbook"]`))
	if href != "/runbook#"+code {
		t.Errorf("the cluster's runbook link is %q, want /runbook#%s", href, code)
	}
	if !pbEval[bool](t, b, pbVisible(cluster+` [data-testid="cluster-snooze"]`)) {
		t.Fatalf("the folded cluster shows no Snooze all: %s", b.text())
	}
	if n := pbEval[int](t, b, pbCountVisible(cluster+` [data-testid="item"]`)); n != 0 {
		t.Errorf("the cluster unfolded by itself: %d items shown", n)
	}
	options := pbEval[string](t, b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(o => o.textContent + (o.selected ? "*" : "")).join(" ")`,
		cluster+` [data-testid="snooze-for"] option`))
	if options != "1h 4h 1d* 1w" {
		t.Errorf("the duration choices are %q, want \"1h 4h 1d* 1w\"", options)
	}
	b.screenshot(t, pbScreenshotDir(t), "queue-cluster-actions")

	// Choose 4h, then one click.
	choose := fmt.Sprintf(`(() => { const s = document.querySelector(%q); s.value = "14400"; s.dispatchEvent(new Event("change", {bubbles: true})); return s.value; })()`,
		cluster+` [data-testid="snooze-for"]`)
	if v := pbEval[string](t, b, choose); v != "14400" {
		t.Fatalf("choosing 4h left %q", v)
	}
	before := time.Now()
	b.do(t, "snooze the cluster", chromedp.Click(chromedp.CSS(cluster+` [data-testid="cluster-snooze"]`)))
	// The tab's first write asks for the token, in the page's form.
	b.until(t, "the token form", pbVisible(`[data-testid="token-form"]`), `document.body.innerText`)
	b.do(t, "the token", chromedp.SendKeys(chromedp.CSS(`[data-testid="token-input"]`), rmtToken),
		chromedp.Click(chromedp.CSS(`[data-testid="token-submit"]`)))
	b.until(t, "the cluster gone", fmt.Sprintf(`!document.querySelector(%q)`, cluster), queueText)
	after := time.Now()
	if n := b.dialogsOf(page.DialogTypeConfirm); n != 0 {
		t.Errorf("%d confirmations for a snooze, want none (%v)", n, b.dialogs)
	}
	if n := b.dialogsOf(page.DialogTypePrompt); n != 0 {
		t.Errorf("%d prompt dialogs, want none: the token is asked in the page (%v)", n, b.dialogs)
	}

	// The API agrees: none shown, each of the six snoozed about 4h.
	if q := d.queue(t, ""); q.Total != 0 {
		t.Errorf("the API's queue after the cluster snooze: %+v", q.Items)
	}
	q := d.queue(t, "include_dismissed=true")
	for _, fp := range fps {
		it, ok := item(q, fp)
		if !ok || !it.Dismissed || it.SnoozedUntil.Before(before.Add(4*time.Hour-time.Second)) || it.SnoozedUntil.After(after.Add(4*time.Hour+time.Second)) {
			t.Errorf("%s with include_dismissed: %+v (found %v), want snoozed about 4h from the click", fp, it, ok)
		}
	}
	// One audit entry per item, with the actor, all of one action.
	log := triageLog(t, d.db)
	oneBatch(t, log, store.TriageSnooze, "token:admin", fps...)
	for _, e := range log {
		if e.SnoozedUntil.Before(before.Add(4*time.Hour-time.Second)) || e.SnoozedUntil.After(after.Add(4*time.Hour+time.Second)) {
			t.Errorf("triage entry %+v: want snoozed about 4h", e)
		}
	}

	// The runbook link leads to the daemon's copy of the section: the
	// code's anchor and the same line.
	b.open(t, d, "/runbook#"+code, `[data-testid="runbook-page"]`)
	sec := pbEval[string](t, b, fmt.Sprintf(`document.getElementById(%q)?.closest('[data-testid="runbook-section"]')?.innerText || ""`, code))
	if !strings.Contains(sec, "Work failed") || !strings.Contains(sec, do) {
		t.Errorf("the runbook's section for %s reads %q", code, sec)
	}

	// The entity page: the reason says it is snoozed, what to do, and
	// dismisses it (one confirmation).
	reason := fmt.Sprintf(`[data-testid="reason"][data-code=%q]`, code)
	b.open(t, d, "/entities/session/f-1", reason)
	if txt := pbEval[string](t, b, fmt.Sprintf(`document.querySelector(%q).innerText`, reason)); !strings.Contains(txt, "snoozed until") ||
		!strings.Contains(txt, "What to do:") {
		t.Errorf("the entity page's reason reads %q, want its snooze and what to do", txt)
	}
	b.do(t, "dismiss on the entity page", chromedp.Click(chromedp.CSS(reason+` [data-testid="reason-dismiss"]`)))
	b.until(t, "the reason shown dismissed", fmt.Sprintf(`(document.querySelector(%q)?.innerText || "") === "dismissed"`, reason+` [data-testid="hidden"]`),
		fmt.Sprintf(`document.querySelector(%q)?.innerText`, reason))
	if n := b.dialogsOf(page.DialogTypeConfirm); n != 1 {
		t.Errorf("%d confirmations after a dismissal, want 1 (%v)", n, b.dialogs)
	}
	if it, ok := item(d.queue(t, "include_dismissed=true"), fps[0]); !ok || !it.Dismissed || !it.SnoozedUntil.IsZero() {
		t.Errorf("%s after the entity page's Dismiss: %+v (found %v)", fps[0], it, ok)
	}
	b.screenshot(t, pbScreenshotDir(t), "entity-triage")
}
