package page

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"watchdog/attention"
	"watchdog/live"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/wire"
)

// entityPage is GET /entities/{type}/{id}.
type entityPage struct {
	layout
	Row       entityRow
	Severity  string
	Reasons   []reasonData
	Timeline  []timelineRow
	Total     int
	Older     string // the link to the page from the first transition
	Newer     string // the link to the next page, when paging
	Latest    string // the link back to the latest transitions, when paging
	Paging    bool
	Heartbeat string
	Progress  string
	// HangDetection says why a hang would not be seen ("" when it would).
	HangDetection string
	// Leftovers is what the named leftovers still running are doing.
	Leftovers *leftoverData
	// Process is the open entity's process facts; nil when it has none.
	Process *processData
}

// processData is the entity page's process facts, as text.
type processData struct {
	Unavailable                         string
	CPU, RSS, Uptime, Tasks, TreeRSS    string
	Descendants, Threads, CPUTime, Mode string
}

// leftoverData is the entity page's line on the leftovers still running.
type leftoverData struct {
	Running int
	CPU     string // "49.0%", their sum
	RSS     string
}

// leftoverDataOf is f as the page shows it; nil when none runs.
func leftoverDataOf(f *state.LeftoverFacts) *leftoverData {
	if f == nil || f.Running == 0 {
		return nil
	}
	return &leftoverData{Running: f.Running, CPU: strconv.FormatFloat(f.CPUPercent, 'f', 1, 64) + "%", RSS: state.FormatBytes(f.RSSBytes)}
}

func processDataOf(f *state.ProcessFacts) *processData {
	if f == nil {
		return nil
	}
	u := f.ProcessUsage
	if u == nil {
		return &processData{Unavailable: f.Unavailable}
	}
	return &processData{
		CPU:         strconv.FormatFloat(u.CPUPercent, 'f', 1, 64) + "% over " + state.FormatAge(time.Duration(u.CPUWindowSeconds*float64(time.Second))),
		CPUTime:     strconv.FormatFloat(u.TreeCPUSeconds, 'f', 2, 64) + "s",
		RSS:         state.FormatBytes(u.RSSBytes),
		TreeRSS:     state.FormatBytes(u.TreeRSSBytes),
		Uptime:      state.FormatAge(time.Duration(u.UptimeSeconds * float64(time.Second))),
		Tasks:       u.TasksText(),
		Threads:     strconv.Itoa(u.Threads),
		Descendants: u.DescendantsText(),
		Mode:        u.TreeMode,
	}
}

type reasonData struct {
	Code     string
	Message  string
	Evidence []evidenceLine
	Todo     todoData
	// Fingerprint is the reason's queue item now, which Snooze and Dismiss act on.
	Fingerprint string
	// Hidden says how a dismissal hides the item now, "" when it shows.
	Hidden string
}

// evidenceLine is a line of evidence cut at its moments, shown as date-times, not seconds.
type evidenceLine []evidencePart

// evidencePart is text, or a moment when At is set.
type evidencePart struct {
	Text string
	// At is the moment (RFC 3339) the script shows in the browser's zone.
	At, Age string
}

type timelineRow struct {
	Seq     int64
	At      string
	Age     string
	From    string
	To      string
	Code    string
	Message string
	Actor   string
	Trigger string
}

func (h *Handler) entity(w http.ResponseWriter, r *http.Request) {
	typ, ok := transitions.CanonicalType(r.PathValue("type"))
	id := r.PathValue("id")
	if !ok {
		h.notFound(w, r, "no entity type "+strconv.Quote(r.PathValue("type")))
		return
	}
	ctx := r.Context()
	if err := h.o.View.Sync(ctx); err != nil {
		h.fail(w, r, err)
		return
	}
	now := h.o.Now()
	var view LiveReader = h.o.View
	ent, found := view.Get(typ, id, now)
	if v := h.fleet; v != nil && !found && !v.Complete("", true) {
		// Not held by a fleet daemon (ADR-0056), or aged out (ADR-0060): from the store.
		var other *live.View
		var err error
		if g, ok := h.o.Store.(interface {
			Get(ctx context.Context, typ, id string) (store.Entity, error)
		}); ok {
			var e store.Entity
			if e, err = g.Get(ctx, typ, id); err == nil && v.Holds(e.HostID, false) {
				ent, found = live.EntryOf(e, now), true
			} else if err == nil {
				other, err = v.For(ctx, e.HostID, false)
			} else if errors.Is(err, store.ErrNotFound) {
				h.notFound(w, r, "no entity "+typ+"/"+id)
				return
			}
		} else {
			other, err = v.For(ctx, "", true)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if other != nil {
			view = other
			ent, found = view.Get(typ, id, now)
		}
	}
	if !found {
		h.notFound(w, r, "no entity "+typ+"/"+id)
		return
	}
	we := wire.FromDerived(ent.Entity, ent.State, nil, h.o.Heartbeats, now)
	p := entityPage{layout: h.frame(r, labelOf(&we)+" · watchdog", now), Row: rowOf(&we, h.hostNames(ctx), now), Severity: string(we.State.Severity), HangDetection: we.HangDetection}
	if we.State.Legacy() {
		p.Severity = "legacy"
	}
	p.Progress = we.HeartbeatProgress
	p.Process = processDataOf(h.o.Processes.Of(&ent.Entity, now))
	p.Leftovers = leftoverDataOf(h.o.Processes.LeftoversOf(&ent.Entity, now))
	// The entity's queue items: which reasons may be triaged, which are hidden.
	items := map[state.ReasonCode]attention.Item{}
	for _, it := range view.EntityItems(typ, id, now) {
		items[it.Reason.Code] = it
	}
	for _, rs := range we.State.Reasons {
		rv := reasonData{Code: string(rs.Code), Message: rs.Message, Todo: h.todo(rs.Code)}
		for _, ev := range rs.Evidence {
			rv.Evidence = append(rv.Evidence, evidenceOf(ev, now))
		}
		if it, ok := items[rs.Code]; ok {
			rv.Fingerprint, rv.Hidden = it.Fingerprint, hiddenText(it, now)
			delete(items, rs.Code)
		}
		p.Reasons = append(p.Reasons, rv)
	}
	// An item whose code is no shown reason still gets a row: all are actionable.
	for _, it := range view.EntityItems(typ, id, now) {
		if _, left := items[it.Reason.Code]; left {
			p.Reasons = append(p.Reasons, reasonData{Code: string(it.Reason.Code), Message: it.Reason.Summary, Todo: h.todo(it.Reason.Code),
				Fingerprint: it.Fingerprint, Hidden: hiddenText(it, now)})
		}
	}

	// The latest transitions, or with ?after=SEQ the API's paging.
	var rows []store.AuditRow
	base := entityHref(typ, id)
	if a := r.URL.Query().Get("after"); a != "" {
		after, err := strconv.ParseInt(a, 10, 64)
		if err != nil || after < 0 {
			h.notFound(w, r, "after "+strconv.Quote(a)+" is not a transition number")
			return
		}
		rows, err = h.o.Store.TransitionsAfter(ctx, typ, id, after, TimelinePage+1)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		p.Paging, p.Latest = true, base
		if len(rows) > TimelinePage {
			rows = rows[:TimelinePage]
			p.Newer = base + "?after=" + strconv.FormatInt(rows[len(rows)-1].Seq, 10)
		}
	} else {
		var err error
		rows, p.Total, err = h.o.Store.LatestTransitions(ctx, typ, id, TimelinePage)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if p.Total > len(rows) {
			p.Older = base + "?after=0"
		}
	}
	// Newest first: what happened last is read first.
	for i := len(rows) - 1; i >= 0; i-- {
		a := rows[i]
		tr := timelineRow{Seq: a.Seq, At: a.At.UTC().Format("2006-01-02 15:04:05Z"), Age: ago(now, a.At), To: a.To,
			Code: a.ReasonCode, Message: a.Message, Actor: a.Actor, Trigger: a.Trigger}
		if a.From != nil {
			tr.From = *a.From
		}
		p.Timeline = append(p.Timeline, tr)
	}
	h.render(w, r, http.StatusOK, "entity.html", p)
}

// hiddenText says how a dismissal hides it now, "" when it shows.
func hiddenText(it attention.Item, now time.Time) string {
	switch {
	case !it.Dismissed:
		return ""
	case it.SnoozedUntil.IsZero():
		return "dismissed"
	default:
		return "snoozed until " + it.SnoozedUntil.UTC().Format(state.StampLayout) + " (" + state.FormatAge(it.SnoozedUntil.Sub(now)) + " from now)"
	}
}

// evidenceOf is one line of a reason's evidence, the detail last, cut at its moments.
func evidenceOf(ev state.EvidenceRef, now time.Time) evidenceLine {
	parts := []string{ev.Kind}
	for _, s := range []string{ev.ID, ev.Path, ev.URL, ev.Repo, ev.CommitSHA, ev.SessionID, ev.MessageID, ev.ToolCallID, ev.ArtifactID, ev.ContentHash} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	head := strings.Join(parts, " · ")
	if ev.Detail == "" {
		return evidenceLine{{Text: head}}
	}
	line := evidenceLine{{Text: head + " · "}}
	rest := ev.Detail
	for _, t := range ev.Times {
		i := strings.Index(rest, t.Text)
		if t.Text == "" || t.At.IsZero() || i < 0 {
			continue // not written as said: the words stay as they are
		}
		if i > 0 {
			line = append(line, evidencePart{Text: rest[:i]})
		}
		at := t.At.UTC()
		age := ago(now, at)
		if at.After(now) {
			age = "in " + state.FormatAge(at.Sub(now))
		}
		line = append(line, evidencePart{Text: state.Stamp(at), At: at.Format(time.RFC3339Nano), Age: age})
		rest = rest[i+len(t.Text):]
	}
	if rest != "" {
		line = append(line, evidencePart{Text: rest})
	}
	return line
}
