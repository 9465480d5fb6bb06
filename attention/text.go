package attention

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"watchdog/state"
)

// Text renders the queue as `watchdog attention` prints it: per severity,
// each cluster's header (ClusterOf), then its items on this page.
func (q Queue) Text() string {
	if q.Total == 0 {
		return "attention queue is empty\n"
	}
	var b strings.Builder
	w := &b
	fmt.Fprintf(w, "ATTENTION QUEUE · %s\n", plural(q.Total, "item"))
	if len(q.Items) < q.Total {
		fmt.Fprintf(w, "(showing the first %d; raise --limit for more)\n", len(q.Items))
	}
	now := q.GeneratedAt
	for _, sev := range Severities {
		var items []Item
		for _, it := range q.Items {
			if it.Severity == sev {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s · %s\n", strings.ToUpper(string(sev)), plural(q.BySeverity[sev], "item"))
		// Clusters in the order their first item appears.
		var order []string
		byCluster := map[string][]Item{}
		for _, it := range items {
			if _, ok := byCluster[it.ClusterID]; !ok {
				order = append(order, it.ClusterID)
			}
			byCluster[it.ClusterID] = append(byCluster[it.ClusterID], it)
		}
		for _, id := range order {
			members := byCluster[id]
			c := ClusterOf(members)
			fmt.Fprintf(w, "  %s · %s · %s\n", c.Code, plural(c.Size, "item"), c.Header(now.Time))
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, it := range members {
				ref := it.Entity.Type + "/" + it.Entity.ID
				label := ""
				if it.Entity.Label != ref {
					label = it.Entity.Label
				}
				summary := it.Reason.Summary
				if hb := it.HeartbeatText(now.Time); hb != "" {
					summary += " · " + hb
				}
				if it.Dismissed {
					if !it.SnoozedUntil.IsZero() {
						summary += fmt.Sprintf(" [snoozed, %s left]", state.FormatLeft(it.SnoozedUntil.Sub(now.Time)))
					} else {
						summary += " [dismissed]"
					}
				}
				// The fingerprint leads the row: what snooze and dismiss take, ready to copy.
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", it.Fingerprint, label, it.Status, state.FormatAge(now.Sub(it.FirstSeenAt.Time))+" ago", summary)
			}
			_ = tw.Flush() // into a strings.Builder: cannot fail
		}
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
