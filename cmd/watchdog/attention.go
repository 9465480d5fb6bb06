package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"watchdog/attention"
	"watchdog/config"
	"watchdog/state"
	"watchdog/target"
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
			sevs, err := state.ParseSeverities(severities, attention.Severities)
			if err != nil {
				return usageError("--severity: severity %v", err)
			}
			q.Severities = sevs
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
				db = configDB(cmd, db, cfg)
			}
			if window <= 0 {
				return usageError("--failure-window %s: must be positive", window)
			}
			ctx := cmd.Context()
			st, err := target.OpenStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			queue, err := attention.Read(ctx, st, q, time.Now())
			if err != nil {
				return err
			}
			return output(cmd.OutOrStdout(), asJSON, queue, queue.Text)
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
