package wire

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// Table is the list as `watchdog status` prints it, ages from GeneratedAt.
func (l EntityList) Table() string { return l.table(false) }

// WideTable is `watchdog status --wide`: Table with the process facts (ADR-0048).
func (l EntityList) WideTable() string { return l.table(true) }

func (l EntityList) table(wide bool) string {
	if len(l.Items) == 0 {
		return "no entities\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	if wide {
		fmt.Fprintln(tw, "SEVERITY\tTYPE\tID\tSTATE\tREASON\tPID\tCPU%\tRSS\tUPTIME\tTASKS\tDESC\tHOST\tSINCE\tHEARTBEAT\tUPDATED")
	} else {
		fmt.Fprintln(tw, "SEVERITY\tTYPE\tID\tSTATE\tREASON\tPID\tHOST\tSINCE\tHEARTBEAT\tUPDATED")
	}
	for _, e := range l.Items {
		sev := strings.ToUpper(string(e.State.Severity))
		if e.State.Legacy() {
			sev = "LEGACY"
		}
		reason := "-"
		if len(e.State.Reasons) > 0 {
			reason = string(e.State.Reasons[len(e.State.Reasons)-1].Code)
		}
		if e.ExitStatus != nil {
			// How the process ended belongs beside why it is dead.
			reason += " (" + e.ExitStatus.Short() + ")"
		}
		pid := "-"
		if e.PID > 0 {
			pid = strconv.Itoa(e.PID)
		}
		host := cmp.Or(e.HostName, e.HostID, "-")
		since := e.StartedAt
		if since.IsZero() {
			since = e.CreatedAt
		}
		// The judged heartbeat, file or posted.
		beat := "-"
		if at := e.LastHeartbeat(); !at.IsZero() {
			beat = l.ago(at)
		}
		if wide {
			pid += "\t" + processColumns(e.Process, e.Leftovers)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sev, e.Type, e.ID, e.Display, reason,
			pid, host, l.ago(since), beat, l.ago(e.UpdatedAt))
	}
	_ = tw.Flush() // into a strings.Builder: cannot fail
	return b.String()
}

// ago is the age of t at the list's GeneratedAt, as a table shows it.
func (l EntityList) ago(t unixtime.Time) string {
	return ago(l.GeneratedAt.Sub(t.Time))
}

// ago is an age in a table: "3m ago", "now" for a time ahead of the clock.
func ago(d time.Duration) string {
	if d < 0 {
		return "now"
	}
	return state.FormatAge(d) + " ago"
}

// processColumns are the wide table's process cells, else the running leftovers'.
func processColumns(p *state.ProcessFacts, left *state.LeftoverFacts) string {
	switch {
	case p == nil && left != nil && left.Running > 0:
		return strconv.FormatFloat(left.CPUPercent, 'f', 1, 64) + " left\t" + state.FormatBytes(left.RSSBytes) + "\t-\t-\t" + strconv.Itoa(left.Running) + " left"
	case p == nil:
		return "-\t-\t-\t-\t-"
	case p.ProcessUsage == nil:
		return "(" + p.Unavailable + ")\t-\t-\t-\t-"
	}
	u := p.ProcessUsage
	return strconv.FormatFloat(u.CPUPercent, 'f', 1, 64) + "\t" + state.FormatBytes(u.RSSBytes) + "\t" +
		state.FormatAge(time.Duration(u.UptimeSeconds*float64(time.Second))) + "\t" + u.TasksText() + "\t" + u.DescendantsText()
}
