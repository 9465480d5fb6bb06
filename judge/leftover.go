package judge

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
)

// LeftoversDue says whether e's live descendants are a finding now
// (ADR-0044): while e is open and alive, they are its work, not leftovers.
func LeftoversDue(e *store.Entity, l probe.Liveness) bool {
	if e.PID <= 0 || e.Lifecycle == nil {
		return false
	}
	return e.Terminal || l == probe.Dead
}

// LeftoverRef is a process a stored leftover finding names, looked at again
// once the root's tree is no longer kept.
type LeftoverRef struct {
	PID        int
	StartTicks uint64
}

// Leftovers are the processes e's stored leftover finding names. Evidence a
// client supplied is never read here: the reaper acts only on what it saw.
func Leftovers(e *store.Entity) []LeftoverRef {
	var out []LeftoverRef
	add := func(r *state.StateReason) {
		for _, ev := range r.Evidence {
			if ref, ok := parseLeftoverID(ev.ID); ok {
				out = append(out, ref)
			}
		}
	}
	for i := range e.Reasons {
		if e.Reasons[i].Code == state.RunHealthLeftoverProcesses {
			add(&e.Reasons[i])
		}
	}
	return out
}

// leftoverID carries the start ticks, which tell a process from a later one reusing its pid.
func leftoverID(p probe.Process) string {
	return "pid:" + strconv.Itoa(p.PID) + ":" + strconv.FormatUint(p.StartTicks, 10)
}

func parseLeftoverID(id string) (LeftoverRef, bool) {
	rest, ok := strings.CutPrefix(id, "pid:")
	if !ok {
		return LeftoverRef{}, false
	}
	p, t, ok := strings.Cut(rest, ":")
	if !ok {
		return LeftoverRef{}, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return LeftoverRef{}, false
	}
	ticks, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return LeftoverRef{}, false
	}
	return LeftoverRef{PID: pid, StartTicks: ticks}, true
}

// MaxLeftoverDetail is how many leftover processes the finding names (and so
// kill_leftovers may signal); the rest are only counted.
const MaxLeftoverDetail = 100

// maxLeftoverNames is how many distinct commands the message names.
const maxLeftoverNames = 8

// leftoverFinding is the finding for procs (sorted by pid). A process already
// named keeps its stored line, so an unchanged set writes nothing.
func leftoverFinding(e *store.Entity, res Result, procs []probe.Process, now time.Time) state.StateReason {
	stored := map[string]state.EvidenceRef{}
	for _, r := range e.Reasons {
		if r.Code == state.RunHealthLeftoverProcesses {
			for _, ev := range r.Evidence {
				stored[ev.ID] = ev
			}
		}
	}
	shown := procs[:min(len(procs), MaxLeftoverDetail)]
	evidence := make([]state.EvidenceRef, 0, len(shown))
	for _, p := range shown {
		id := leftoverID(p)
		if ev, ok := stored[id]; ok {
			evidence = append(evidence, ev)
			continue
		}
		evidence = append(evidence, state.EvidenceRef{
			Kind: state.EvidenceToolResult, ID: id, Path: "/proc/" + strconv.Itoa(p.PID),
			Detail:    fmt.Sprintf("pid %d %s, started %s, RSS %s", p.PID, p.Comm, state.Stamp(p.StartTime), bytesText(p.RSS)),
			FetchedAt: unixtime.Of(now),
			Times:     []state.EvidenceTime{state.TimeOf(state.Stamp(p.StartTime), p.StartTime)},
		})
	}
	if rest := len(procs) - len(shown); rest > 0 {
		evidence = append(evidence, state.EvidenceRef{
			Kind: state.EvidenceToolResult, ID: LeftoverMorePrefix + strconv.Itoa(rest),
			Detail: fmt.Sprintf("%d more descendants, not listed: the first %d by pid are", rest, MaxLeftoverDetail),
		})
	}
	return state.Observed(state.RunHealthLeftoverProcesses, leftoverMessage(e, res, procs), evidence...)
}

// LeftoverMorePrefix begins the ID of the evidence line counting leftovers
// past MaxLeftoverDetail, which are never signalled.
const LeftoverMorePrefix = "more:"

// leftoverMessage says what is left and of what: "pid 4242 exited with
// status 0; 3 descendants still running (node, chrome ×2)".
func leftoverMessage(e *store.Entity, res Result, procs []probe.Process) string {
	var b strings.Builder
	switch {
	case res.Liveness == probe.Dead && e.Exit != nil:
		b.WriteString(e.Exit.Text(e.PID))
		b.WriteString("; ")
	case res.Liveness == probe.Dead:
		fmt.Fprintf(&b, "pid %d is gone; ", e.PID)
	default:
		fmt.Fprintf(&b, "the entity ended with pid %d still running; ", e.PID)
	}
	n := len(procs)
	noun := "descendants"
	if n == 1 {
		noun = "descendant"
	}
	fmt.Fprintf(&b, "%d %s still running (%s)", n, noun, commands(procs))
	if n > MaxLeftoverDetail {
		fmt.Fprintf(&b, "; the first %d by pid in the evidence", MaxLeftoverDetail)
	}
	return b.String()
}

// commands names the processes by command, in the order of their first
// pid, each once with its count: "node, chrome ×2".
func commands(procs []probe.Process) string {
	count := map[string]int{}
	var names []string
	for _, p := range procs {
		c := p.Comm
		if c == "" {
			c = "?"
		}
		if count[c] == 0 {
			names = append(names, c)
		}
		count[c]++
	}
	more := 0
	if len(names) > maxLeftoverNames {
		more, names = len(names)-maxLeftoverNames, names[:maxLeftoverNames]
	}
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = c
		if count[c] > 1 {
			parts[i] += " ×" + strconv.Itoa(count[c])
		}
	}
	if more > 0 {
		parts = append(parts, strconv.Itoa(more)+" other commands")
	}
	return strings.Join(parts, ", ")
}

// bytesText is a size as a person reads it: "812 KiB", "1.2 MiB".
func bytesText(n uint64) string {
	switch {
	case n == 0:
		return "unknown"
	case n < 1<<20:
		return strconv.FormatUint((n+512)>>10, 10) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}
