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

// Table is the list as `watchdog status` prints it: one row per entity,
// most severe first as Items are ordered, ages counted from GeneratedAt.
// Beside the state it has what an on-call person reaches for next: the
// process (PID), the host it runs on (what --host takes), since when it
// runs (started_at, else its registration) and how old its last
// heartbeat is (the one judged: Entity.LastHeartbeat); "-" where the entity has none.
func (l EntityList) Table() string {
	if len(l.Items) == 0 {
		return "no entities\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEVERITY\tTYPE\tID\tSTATE\tREASON\tPID\tHOST\tSINCE\tHEARTBEAT\tUPDATED")
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
		host := cmp.Or(e.HostID, "-")
		since := e.StartedAt
		if since.IsZero() {
			since = e.CreatedAt
		}
		// The heartbeat the judgement takes (a heartbeat file's mtime or a
		// posted one), not only the posted one.
		beat := "-"
		if at := e.LastHeartbeat(); !at.IsZero() {
			beat = l.ago(at)
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
