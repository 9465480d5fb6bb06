package reaper

import (
	"context"
	"fmt"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/judge"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// OnceAction is one decided lifecycle change of a RunOnce.
type OnceAction struct {
	Job        string `json:"job"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	From       string `json:"from"`
	To         string `json:"to"`
	ReasonCode string `json:"reason_code"`
	Detail     string `json:"detail"`
	// Terminal: To ends the entity (else it is blocked, say).
	Terminal bool   `json:"terminal"`
	Applied  bool   `json:"applied"`
	Skipped  string `json:"skipped,omitempty"`
}

// Waiting is an open entity whose process is recorded dead but that a run
// did not end or flag yet.
type Waiting struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	DeadSince unixtime.Time `json:"dead_since"`
	// EndsAfter is when terminal_grace runs out; in the past when the
	// grace has run out but the death could not be confirmed now.
	EndsAfter unixtime.Time `json:"ends_after"`
	// Fate is what happens once the grace is over: "end" (in To) for a
	// type with an end for a dead process, "flag" for the others.
	Fate string `json:"fate"`
	To   string `json:"to,omitempty"`
	Why  string `json:"why"`
}

// Flagged is an open entity whose process is dead and whose type has no end for it.
type Flagged struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Lifecycle string        `json:"lifecycle"`
	DeadSince unixtime.Time `json:"dead_since"`
	Message   string        `json:"message"`
}

// OnceReport is what one RunOnce did (the `watchdog reap --json` body).
type OnceReport struct {
	DryRun  bool         `json:"dry_run"`
	Actions []OnceAction `json:"actions"`
	Flagged []Flagged    `json:"flagged"`
	Waiting []Waiting    `json:"waiting"`
	// Probed is how many entities the closing sweep probed; Recorded how
	// many had new findings (recorded; in a dry run only found).
	Probed    int  `json:"probed"`
	Recorded  int  `json:"recorded"`
	Truncated bool `json:"truncated"`
	// TerminalGrace is the grace applied, in seconds.
	TerminalGrace float64 `json:"terminal_grace"`
}

// RunOnce runs enforce_terminal, reap_phantoms, then one sweep: acting before
// probing makes a death first seen now wait out its grace. A dry run writes
// nothing (dryStore); the report holds what was done even when a later step failed.
func (r *Reaper) RunOnce(ctx context.Context) (OnceReport, error) {
	start := r.now()
	res := OnceReport{DryRun: r.Settings.DryRun, Actions: []OnceAction{}, Flagged: []Flagged{}, Waiting: []Waiting{}, TerminalGrace: r.Settings.TerminalGrace.Seconds()}
	acted := map[string]bool{}
	for _, job := range []func(context.Context) (Report, error){r.EnforceTerminal, r.ReapPhantoms} {
		rep, err := job(ctx)
		res.Truncated = res.Truncated || rep.Truncated
		for _, a := range rep.Actions {
			g, gerr := transitions.Lookup(a.Type)
			res.Actions = append(res.Actions, OnceAction{
				Job: rep.Job, Type: a.Type, ID: a.ID, From: a.From, To: a.To, ReasonCode: string(a.Reason),
				Detail: a.Detail, Terminal: gerr == nil && g.IsTerminal(a.To), Applied: a.Applied, Skipped: a.Skipped,
			})
			acted[a.Type+"/"+a.ID] = true
		}
		if err != nil {
			return res, err
		}
	}
	sweeper := r
	if r.Settings.DryRun {
		sweeper = &Reaper{Store: newDryStore(r.Store), Writer: r.Writer, Prober: r.Prober, HostID: r.HostID, Leads: r.Leads,
			Settings: r.Settings, Log: r.Log, Now: r.Now, Signal: r.Signal}
	}
	rep, err := sweeper.Sweep(ctx)
	res.Probed, res.Recorded = rep.Checked, rep.Written
	if err != nil {
		return res, err
	}
	// Schedules are the sweep's blind spot: check them so a dead scheduler is listed.
	rep, err = sweeper.CheckSchedules(ctx)
	res.Probed, res.Recorded = res.Probed+rep.Checked, res.Recorded+rep.Written
	if err != nil {
		return res, err
	}
	list, err := sweeper.openOnHost(ctx)
	if err != nil {
		return res, fmt.Errorf("list dead entities: %w", err)
	}
	for _, e := range list {
		if acted[e.Type+"/"+e.ID] {
			continue
		}
		if f, ok := judge.Flagged(&e); ok {
			res.Flagged = append(res.Flagged, Flagged{Type: e.Type, ID: e.ID, Lifecycle: e.LifecycleOr(""), DeadSince: unixtime.Of(e.DeadSince), Message: f.Message})
			continue
		}
		if w, ok := r.waiting(e, start, res.Truncated); ok {
			res.Waiting = append(res.Waiting, w)
		}
	}
	return res, nil
}

// waiting says whether e is recorded dead and still waits for its fate, and why.
func (r *Reaper) waiting(e store.Entity, start time.Time, truncated bool) (Waiting, bool) {
	if e.DeadSince.IsZero() || e.Terminal || e.Lifecycle == nil {
		return Waiting{}, false
	}
	grace := r.Settings.TerminalGrace
	now := r.now()
	dead := e.DeadSince
	ends := dead.Add(grace)
	w := Waiting{Type: e.Type, ID: e.ID, DeadSince: unixtime.Of(dead), EndsAfter: unixtime.Of(ends), Fate: "flag"}
	fate := "flags it for the operator (its type has no end for a dead process)"
	if to := judge.EnforceTarget(&e); to != "" {
		w.Fate, w.To = "end", to
		fate = "ends it"
	}
	switch left := ends.Sub(now); {
	// The store keeps microseconds: a death recorded at or after start
	// reads back no earlier than start truncated to them.
	case !dead.Before(start.Truncate(unixtime.Precision)):
		w.Why = fmt.Sprintf("process first seen dead by this run: terminal_grace %s starts now, a later reap (or the daemon) %s", grace, fate)
	case left > 0:
		w.Why = fmt.Sprintf("process dead since %s, within terminal_grace %s: a later reap (or the daemon) %s after %s",
			state.Stamp(dead), grace, fate, state.Stamp(ends))
	case truncated:
		w.Why = fmt.Sprintf("process dead since %s, past terminal_grace: not reached before reaper.max_per_run, or not confirmed dead now",
			state.Stamp(dead))
	default:
		w.Why = fmt.Sprintf("process recorded dead since %s, but its death could not be confirmed now (liveness unknown): not ended",
			state.Stamp(dead))
	}
	return w, true
}

// Text is the report as `watchdog reap` prints it: one line per action,
// one per waiting entity, and a summary.
func (r OnceReport) Text() string {
	var b strings.Builder
	var done, skipped int
	for _, a := range r.Actions {
		base, past := "move", "moved"
		if a.Terminal {
			base, past = "end", "ended"
		}
		var verb string
		switch {
		case r.DryRun:
			verb = "would " + base
		case a.Applied:
			verb = past
			done++
		default:
			verb = "skipped"
			skipped++
		}
		fmt.Fprintf(&b, "%s %s/%s: %s -> %s (%s)", verb, a.Type, a.ID, a.From, a.To, a.ReasonCode)
		if a.Detail != "" {
			b.WriteString(": " + a.Detail)
		}
		if !r.DryRun && !a.Applied && a.Skipped != "" {
			b.WriteString(" [" + a.Skipped + "]")
		}
		b.WriteByte('\n')
	}
	for _, f := range r.Flagged {
		verb := "flagged"
		if r.DryRun {
			verb = "would flag"
		}
		fmt.Fprintf(&b, "%s %s/%s (%s, critical): %s\n", verb, f.Type, f.ID, f.Lifecycle, f.Message)
	}
	for _, wt := range r.Waiting {
		fate := "would flag it"
		if wt.Fate == "end" {
			fate = "would end it in " + wt.To
		}
		fmt.Fprintf(&b, "waiting %s/%s (%s): %s\n", wt.Type, wt.ID, fate, wt.Why)
	}
	if r.DryRun {
		fmt.Fprintf(&b, "dry run: %d would change, %d would be flagged, %d dead and waiting; %d entities probed; nothing written\n",
			len(r.Actions), len(r.Flagged), len(r.Waiting), r.Probed)
	} else {
		fmt.Fprintf(&b, "reap: %d changed, %d lost to a racing writer, %d flagged, %d dead and waiting; %d entities probed, %d with new findings recorded\n",
			done, skipped, len(r.Flagged), len(r.Waiting), r.Probed, r.Recorded)
	}
	if r.Truncated {
		b.WriteString("stopped at reaper.max_per_run: run again for the rest\n")
	}
	return b.String()
}
