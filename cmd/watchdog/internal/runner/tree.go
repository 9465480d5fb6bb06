package runner

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/proctree"
	"watchdog/state"
)

// leftoverListMax bounds the leftover processes the end names one by one
// (the rest are counted): with the kept output, the reason stays within
// the write path's limits on evidence items and bytes.
const leftoverListMax = 16

// leftover is a process the child left behind, running when the child
// ended: a descendant of the runner (the child's orphans are reparented
// to the runner, its subreaper), named by pid and start ticks.
type leftover struct {
	proc proctree.Proc
	// signal is the last signal the runner sent it (0: none); gone that
	// it was seen to end; after how long it ended, counted from the
	// SIGTERM.
	signal syscall.Signal
	gone   bool
	after  time.Duration
}

// listLeftovers is the runner's live descendants: after the child has
// ended, exactly what it left running (a double-forked daemon, a shell's
// background job), wherever it went in the tree, since every orphan of
// the child's tree is reparented to the runner. One walk from the runner
// down the kernel's children lists (ADR-0043's seed).
func listLeftovers() []proctree.Proc {
	t, err := proctree.New(proctree.Options{Walk: true})
	if err != nil {
		return nil
	}
	defer t.Close() //nolint:errcheck // a walk-mode tree holds nothing to close
	self := proctree.Root{PID: os.Getpid()}
	if t.Watch(self) != nil {
		return nil
	}
	procs, _ := t.Descendants(self)
	return procs
}

// leftoverFates is what the end says of the leftovers: a clause for the
// message ("1 leftover process ended by exec: sleep (SIGTERM)") and one
// evidence item per process (at most leftoverListMax, then a count),
// each with the ID a leftover finding uses (pid:<pid>:<start ticks>), so
// that one still running is the judge's to report (ADR-0047).
func leftoverFates(ls []leftover, kill bool, at time.Time) (string, []state.EvidenceRef) {
	if len(ls) == 0 {
		return "", nil
	}
	var ended, running []string
	var ev []state.EvidenceRef
	for i, l := range ls {
		p := l.proc
		what := p.Comm
		if what == "" {
			what = "?"
		}
		var fate string
		switch {
		case l.gone && l.signal != 0:
			fate = "ended by exec: " + signalName(l.signal)
			if l.signal == syscall.SIGKILL {
				fate += fmt.Sprintf(" after %s", l.after.Round(time.Millisecond))
			}
			ended = append(ended, what+" ("+signalName(l.signal)+")")
		case l.gone:
			fate = "ended on its own"
			ended = append(ended, what)
		case kill:
			fate = "still running after " + signalName(l.signal)
			running = append(running, what)
		default:
			fate = "left running (--kill-leftovers=false)"
			running = append(running, what)
		}
		if i < leftoverListMax {
			ev = append(ev, state.EvidenceRef{
				Kind: state.EvidenceToolResult, ID: fmt.Sprintf("pid:%d:%d", p.PID, p.StartTicks), Path: fmt.Sprintf("/proc/%d", p.PID),
				Detail: fmt.Sprintf("pid %d %s, left by the command: %s", p.PID, what, fate), FetchedAt: unixtime.Of(at),
			})
		}
	}
	if n := len(ls) - leftoverListMax; n > 0 {
		ev = append(ev, state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: fmt.Sprintf("and %d more leftover processes, not listed", n), FetchedAt: unixtime.Of(at)})
	}
	var parts []string
	if len(ended) > 0 {
		parts = append(parts, fmt.Sprintf("%s ended by exec: %s", countNoun(len(ended), "leftover process", "leftover processes"), joinMax(ended)))
	}
	if len(running) > 0 {
		parts = append(parts, fmt.Sprintf("%s still running: %s", countNoun(len(running), "leftover process", "leftover processes"), joinMax(running)))
	}
	return strings.Join(parts, "; "), ev
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// joinMax names the processes in order, each name once with its count
// ("sleep, chrome ×3"), the first few names only, so a fork bomb's
// leftovers make a sentence, not a page.
func joinMax(names []string) string {
	const show = 5
	count := map[string]int{}
	var order []string
	for _, n := range names {
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	parts := make([]string, 0, show)
	for i, n := range order {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(order)-show))
			break
		}
		if count[n] > 1 {
			n += fmt.Sprintf(" ×%d", count[n])
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, ", ")
}

// verified says whether pid is still the process p names (its start
// ticks), read now: the guard before every signal, so a pid reused by
// another process is never signalled.
func verified(h *probe.Host, p proctree.Proc) bool {
	if p.StartTicks == 0 {
		return false
	}
	_, err := h.Process(p.PID, p.StartTicks)
	return err == nil
}
