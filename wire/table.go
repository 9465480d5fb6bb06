package wire

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"watchdog/state"
)

// Table is the list as `watchdog status` prints it: one row per entity,
// most severe first as Items are ordered, ages counted from GeneratedAt.
func (l EntityList) Table() string {
	if len(l.Items) == 0 {
		return "no entities\n"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEVERITY\tTYPE\tID\tSTATE\tREASON\tUPDATED")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sev, e.Type, e.ID, e.Display, reason, ago(l.GeneratedAt.Sub(e.UpdatedAt.Time)))
	}
	_ = tw.Flush() // into a strings.Builder: cannot fail
	return b.String()
}

// ago is an age in a table: "3m ago", "now" for a time ahead of the clock.
func ago(d time.Duration) string {
	if d < 0 {
		return "now"
	}
	return state.FormatAge(d) + " ago"
}
