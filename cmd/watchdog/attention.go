package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"watchdog/attention"
	"watchdog/config"
)

// newAttentionCmd is `watchdog attention`: the attention queue of SPEC §8
// read straight from the store, printed grouped by severity and then by
// cluster (reason code), or as the API's JSON with --json.
func newAttentionCmd() *cobra.Command {
	var (
		db, severities   string
		limit            int
		includeDismissed bool
		asJSON           bool
		window           time.Duration
		configPath       string
	)
	c := &cobra.Command{
		Use:   "attention",
		Short: "Print the attention queue, grouped by cluster (reason code), critical first",
		Long: `Print what needs a person: one item per entity and reason code, for every
entity whose severity is critical, warning or info, clustered by reason code
across entity types. Dismissed and snoozed items are hidden unless
--include-dismissed. Failed and timed-out work leaves the queue
--failure-window after it ended. --json prints the body of GET /api/attention;
its fingerprints are what POST /api/attention/snooze and /dismiss take.`,
		Example: `  watchdog attention
  watchdog attention --config /etc/watchdog/config.yaml   # the daemon's database and failure window
  watchdog attention --severity critical --limit 20
  watchdog attention --json | jq '.by_severity'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := attention.Query{Limit: limit, IncludeDismissed: includeDismissed, FailureWindow: window}
			if strings.TrimSpace(severities) != "" {
				sevs, err := attention.ParseSeverities(severities)
				if err != nil {
					return usageError("--severity: %v", err)
				}
				q.Severities = sevs
			}
			if limit < 1 || limit > attention.MaxLimit {
				return usageError("--limit %d: must be from 1 to %d", limit, attention.MaxLimit)
			}
			if configPath != "" {
				// The daemon's own config: its failure window, and its
				// database unless one was named here, so this prints the
				// queue the daemon serves.
				cfg, err := config.Load(configPath)
				if err != nil {
					return err
				}
				if !cmd.Flags().Changed("failure-window") {
					window = time.Duration(cfg.Thresholds.FailureWindow)
					q.FailureWindow = window
				}
				if !cmd.Flags().Changed("db") && os.Getenv("WATCHDOG_DB") == "" {
					db = cfg.Store.DSN
				}
			}
			if window <= 0 {
				return usageError("--failure-window %s: must be positive", window)
			}
			ctx := cmd.Context()
			st, err := openStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			now := time.Now()
			list, err := st.AttentionCandidates(ctx, attention.Since(now, window))
			if err != nil {
				return err
			}
			dismissals, err := st.Dismissals(ctx)
			if err != nil {
				return err
			}
			queue := attention.Build(list, dismissals, q, now)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(queue)
			}
			return printAttention(cmd.OutOrStdout(), queue)
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the queue as JSON (the GET /api/attention body)")
	f.StringVar(&severities, "severity", "", "only these severities, comma separated (critical,warning,info)")
	f.IntVar(&limit, "limit", attention.DefaultLimit, fmt.Sprintf("at most this many items (1-%d)", attention.MaxLimit))
	f.BoolVar(&includeDismissed, "include-dismissed", false, "also show dismissed and snoozed items, marked")
	f.DurationVar(&window, "failure-window", attention.DefaultFailureWindow, "how long ended failures stay in the queue (the daemon's thresholds.failure_window)")
	f.StringVar(&configPath, "config", "", "the daemon's config file: take its thresholds.failure_window and (without --db or WATCHDOG_DB) its store.dsn")
	addDBFlag(c, &db)
	return c
}

// printAttention renders the queue like ADR-0030 §8: a severity header
// with its count over the whole queue, then each cluster (its size over
// the whole queue too), then its items on this page.
func printAttention(w io.Writer, q attention.Queue) error {
	if q.Total == 0 {
		_, err := fmt.Fprintln(w, "attention queue is empty")
		return err
	}
	fmt.Fprintf(w, "ATTENTION QUEUE · %s\n", plural(q.Total, "item"))
	if len(q.Items) < q.Total {
		fmt.Fprintf(w, "(showing the first %d; raise --limit for more)\n", len(q.Items))
	}
	now := q.GeneratedAt
	for _, sev := range attention.Severities {
		var items []attention.Item
		for _, it := range q.Items {
			if it.Severity == sev {
				items = append(items, it)
			}
		}
		if len(items) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s · %s\n", strings.ToUpper(string(sev)), plural(q.BySeverity[sev], "item"))
		// Clusters in the order their first item appears (most urgent,
		// most recent first).
		var order []string
		byCluster := map[string][]attention.Item{}
		for _, it := range items {
			if _, ok := byCluster[it.ClusterID]; !ok {
				order = append(order, it.ClusterID)
			}
			byCluster[it.ClusterID] = append(byCluster[it.ClusterID], it)
		}
		for _, id := range order {
			members := byCluster[id]
			first := members[0]
			fmt.Fprintf(w, "  %s · %s\n", first.Reason.Code, plural(first.ClusterSize, "item"))
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			for _, it := range members {
				ref := it.Entity.Type + "/" + it.Entity.ID
				label := ""
				if it.Entity.Label != ref {
					label = it.Entity.Label
				}
				summary := it.Reason.Summary
				if it.Dismissed {
					if !it.SnoozedUntil.IsZero() {
						summary += fmt.Sprintf(" [snoozed, %s left]", attentionAge(it.SnoozedUntil.Sub(now.Time).Seconds()))
					} else {
						summary += " [dismissed]"
					}
				}
				fmt.Fprintf(tw, "    %s\t%s\t%s\t%s\t%s\n", ref, label, it.Status, attentionAge(now.Sub(it.FirstSeenAt.Time).Seconds())+" ago", summary)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// attentionAge renders a duration in seconds the way operators read it:
// 42s, 7m, 3h, 2d.
func attentionAge(seconds float64) string {
	switch {
	case seconds < 1:
		return "0s"
	case seconds < 60:
		return fmt.Sprintf("%ds", int(seconds))
	case seconds < 3600:
		return fmt.Sprintf("%dm", int(seconds/60))
	case seconds < 86400:
		return fmt.Sprintf("%dh", int(seconds/3600))
	}
	return fmt.Sprintf("%dd", int(seconds/86400))
}
