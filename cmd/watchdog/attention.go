package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"watchdog/attention"
	"watchdog/state"
)

// newAttentionCmd is `watchdog attention`: the attention queue from the
// store or a daemon's API, grouped by severity and cluster.
func newAttentionCmd() *cobra.Command {
	var (
		db, severities   string
		server, host     string
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
across entity types. Each item's row starts with its fingerprint
(TYPE:ID:REASON_CODE), which watchdog snooze and watchdog dismiss take.
Dismissed and snoozed items are hidden unless --include-dismissed. Failed
and timed-out work leaves the queue --failure-window after it ended.
--json prints the body of GET /api/attention.

It reads a database (--db, WATCHDOG_DB, else the daemon config's store.dsn)
or, with --server (WATCHDOG_SERVER), a daemon's API, which applies its own
failure window; any daemon of a fleet serves every host's queue. Both print
the same. --host keeps one host's items.

From a database it judges with the daemon's settings: its config is
--config, else $WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists
(the systemd unit's); without one it uses the default thresholds (a 24h failure
window) and says so in one line on stderr. When no daemon serves the
database it says so on stderr with when one last judged it, and --json
carries the same facts in "judge": nothing in it has been judged since.`,
		Example: `  watchdog attention
  watchdog attention --config /etc/watchdog/config.yaml   # that daemon's database and failure window
  watchdog attention --severity critical --limit 20
  watchdog attention --json | jq '.by_severity'
  watchdog attention --server http://127.0.0.1:9715 --host "$(cat /etc/machine-id)"
  watchdog snooze session:s-42:run.health.stalled --for 4h`,
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
			q.Host = host
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				return err
			}
			var set settings
			if remote, _ := to.Remote(); remote {
				// The daemon's config decides its window; a local one would be ignored.
				if cmd.Flags().Changed("failure-window") {
					return usageError("--failure-window reads a local database: with --server the daemon applies its own thresholds.failure_window")
				}
			} else {
				// The daemon's settings and database, so this prints its queue.
				if set, to.DB, err = localSettings(cmd, db); err != nil {
					return err
				}
				to.RunbookURL = set.cfg.Alertmanager.RunbookURL
				if !cmd.Flags().Changed("failure-window") {
					window = time.Duration(set.cfg.Thresholds.FailureWindow)
					q.FailureWindow = window
				}
				if window <= 0 {
					return usageError("--failure-window %s: must be positive", window)
				}
			}
			ctx := cmd.Context()
			t, err := to.Open(ctx, false, false)
			if err != nil {
				return err
			}
			defer t.Close()
			queue, err := t.Queue(ctx, q)
			if err != nil {
				return to.Explain(err)
			}
			j, err := judgeOf(ctx, t, set)
			if err != nil {
				return err
			}
			if j == nil {
				return output(cmd.OutOrStdout(), asJSON, queue, queue.Text)
			}
			j.warn(cmd.ErrOrStderr(), set)
			return output(cmd.OutOrStdout(), asJSON, localQueue{Queue: queue, Judge: *j}, queue.Text)
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the queue as JSON (the GET /api/attention body)")
	f.StringVar(&severities, "severity", "", "only these severities, comma separated (critical,warning,info)")
	f.IntVar(&limit, "limit", attention.DefaultLimit, fmt.Sprintf("at most this many items (1-%d)", attention.MaxLimit))
	f.BoolVar(&includeDismissed, "include-dismissed", false, "also show dismissed and snoozed items, marked")
	f.DurationVar(&window, "failure-window", attention.DefaultFailureWindow, "how long ended failures stay in the queue (the daemon's thresholds.failure_window)")
	addConfigFlag(c, &configPath)
	f.Lookup("config").Usage += "; not with --server"
	f.StringVar(&host, "host", "", "only the items of entities recorded on this host: its hostname or its id (a fleet's daemons share one store)")
	addReadFlags(c, &db, &server)
	return c
}
