package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"watchdog/attention"
	"watchdog/cmd/watchdog/internal/target"
	"watchdog/internal/unixtime"
	"watchdog/transitions"
)

// triageBy is who a dismissal made on the database is recorded as: the
// command's user, as the kernel names it.
var triageBy = target.Me().Name

// newSnoozeCmd is `watchdog snooze` (docs/reference/cli.md).
func newSnoozeCmd() *cobra.Command {
	var db, server, configPath, cluster string
	span := snoozeSpan(attention.SnoozeFor)
	c := &cobra.Command{
		Use:   "snooze FINGERPRINT... | --cluster KEY",
		Short: "Hide attention items for a while (default 1d), until their entity's status changes",
		Long: `Hide the attention items FINGERPRINT... (TYPE:ID:REASON_CODE, as watchdog
attention prints them), or with --cluster every item of one cluster
(cluster_REASON_CODE, or the reason code) that the queue shows now and no
dismissal hides, for --for, or until its entity's lifecycle changes,
whichever comes first. Each item must be in the queue now: a fingerprint
of a condition that cleared, aged out or never existed is refused (exit 1)
and then nothing is snoozed, so a typo cannot silence a future item. If
the condition clears and comes back, it is a new item the snooze does not
hide. Several items are snoozed in one transaction, each logged with who
did it.

Through a daemon with --server (WATCHDOG_SERVER; POST /api/attention/snooze,
authenticated as the writing commands are), or into a database: --db, else
WATCHDOG_DB, else the store.dsn of the daemon's config (--config, else
$WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists), whose
failure window decides what is in the queue.`,
		Example: `  watchdog snooze session:s-42:run.health.stalled
  watchdog snooze play:p-7:run.failed.exit_nonzero --for 4h --server http://127.0.0.1:9715
  watchdog snooze session:s-1:run.health.stalled session:s-2:run.health.stalled --for 4h
  watchdog snooze --cluster cluster_run.health.stalled --for 1w`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return triage(cmd, args, cluster, time.Duration(span), db, server)
		},
	}
	c.Flags().Var(&span, "for", "how long to hide the items: a duration like 90m or 4h, or days like 1d, or weeks like 1w")
	addTriageFlags(c, &db, &server, &configPath, &cluster)
	return c
}

// newDismissCmd is `watchdog dismiss` (docs/reference/cli.md).
func newDismissCmd() *cobra.Command {
	var db, server, configPath, cluster string
	c := &cobra.Command{
		Use:   "dismiss FINGERPRINT... | --cluster KEY",
		Short: "Hide attention items until their entity's status changes",
		Long: `Dismiss the attention items FINGERPRINT... (TYPE:ID:REASON_CODE, as watchdog
attention prints them), or with --cluster every item of one cluster
(cluster_REASON_CODE, or the reason code) that the queue shows now and no
dismissal hides: each stays hidden until its entity's lifecycle changes.
Each item must be in the queue now (else exit 1, and nothing is
dismissed), and a recurrence of the condition is a new item the dismissal
does not hide.

Through a daemon with --server (WATCHDOG_SERVER; POST /api/attention/dismiss,
authenticated as the writing commands are), or into a database: --db, else
WATCHDOG_DB, else the store.dsn of the daemon's config (--config, else
$WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists), whose
failure window decides what is in the queue.`,
		Example: `  watchdog dismiss session:s-42:run.delivery.missing
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog dismiss agent:a-1:run.health.stalled
  watchdog dismiss session:s-1:run.failed.signal session:s-2:run.failed.signal
  watchdog dismiss --cluster run.delivery.missing`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return triage(cmd, args, cluster, 0, db, server)
		},
	}
	addTriageFlags(c, &db, &server, &configPath, &cluster)
	return c
}

func addTriageFlags(c *cobra.Command, db, server, configPath, cluster *string) {
	c.Flags().StringVar(cluster, "cluster", "", "every item of this cluster the queue shows now (cluster_REASON_CODE, or the code), instead of fingerprints")
	addTargetFlags(c, db, server)
	c.Flags().Lookup("server").Usage = strings.Replace(c.Flags().Lookup("server").Usage, "write through", "snooze or dismiss through", 1)
	addConfigFlag(c, configPath)
	c.Flags().Lookup("config").Usage += "; not with --server"
}

// triage snoozes (span > 0) or dismisses the items fps name, or those of
// cluster, and prints what it did.
func triage(cmd *cobra.Command, fps []string, cluster string, span time.Duration, db, server string) error {
	switch {
	case cluster != "" && len(fps) > 0:
		return usageError("give fingerprints or --cluster, not both")
	case cluster == "" && len(fps) == 0:
		return usageError("give the fingerprints of the items (TYPE:ID:REASON_CODE, as watchdog attention prints them), or --cluster KEY")
	case cluster != "":
		if _, err := attention.ParseCluster(cluster); err != nil {
			return usageError("--cluster: %v", err)
		}
	case len(fps) > attention.MaxBulk:
		return usageError("%d fingerprints; at most %d at once (--cluster takes a cluster whole)", len(fps), attention.MaxBulk)
	}
	for _, fp := range fps {
		if _, _, _, err := attention.ParseFingerprint(fp); err != nil {
			return usageError("%v (copy it from watchdog attention)", err)
		}
	}
	to, err := resolveTarget(cmd, db, server)
	if err != nil {
		return err
	}
	now := time.Now()
	var until time.Time
	if span > 0 {
		until = now.Add(span)
	}
	var set settings
	remote, _ := to.Remote() // resolveTarget refused what Remote refuses
	if !remote {
		// The items must be in the daemon's queue: its window, its database.
		if set, to.DB, err = localSettings(cmd, db); err != nil {
			return err
		}
	}
	ctx := cmd.Context()
	t, err := to.Open(ctx, false, false)
	if err != nil {
		return err
	}
	defer t.Close()
	var window time.Duration
	if set.cfg != nil {
		window = time.Duration(set.cfg.Thresholds.FailureWindow)
	}
	done := fps
	if len(fps) == 1 {
		d := attention.Dismissing{Fingerprint: fps[0], Until: until, ClearOnStatusChange: true, By: triageBy}
		if err := t.Dismiss(ctx, d, now, window); err != nil {
			return to.Explain(err)
		}
	} else {
		b := attention.Bulk{Fingerprints: fps, Until: until, ClearOnStatusChange: true, By: triageBy}
		if done, err = t.DismissAll(ctx, b, cluster, now, window); err != nil {
			return to.Explain(err)
		}
	}
	if !remote {
		set.printNote(cmd.ErrOrStderr())
	}
	out := cmd.OutOrStdout()
	if len(fps) == 1 {
		if span > 0 {
			_, err = fmt.Fprintf(out, "snoozed %s until %s (or until its status changes)\n", fps[0], until.Format("2006-01-02 15:04 MST"))
		} else {
			_, err = fmt.Fprintf(out, "dismissed %s until its status changes\n", fps[0])
		}
		return err
	}
	what := strconv.Itoa(len(done)) + " items"
	if len(done) == 1 {
		what = "1 item"
	}
	if cluster != "" {
		what += " of " + cluster
	}
	if span > 0 {
		_, err = fmt.Fprintf(out, "snoozed %s until %s (or until each one's status changes):\n", what, until.Format("2006-01-02 15:04 MST"))
	} else {
		_, err = fmt.Fprintf(out, "dismissed %s until each one's status changes:\n", what)
	}
	for _, fp := range done {
		if err == nil {
			_, err = fmt.Fprintf(out, "  %s\n", fp)
		}
	}
	return err
}

// snoozeSpan is --for: a Go duration, or days ("1.5d") or weeks ("1w").
type snoozeSpan time.Duration

func (s *snoozeSpan) String() string {
	d := time.Duration(*s)
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

func (s *snoozeSpan) Set(v string) error {
	d, err := time.ParseDuration(v)
	secs := d.Seconds()
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(v, suffix); ok && err != nil {
			var f float64
			if f, err = strconv.ParseFloat(n, 64); err == nil || errors.Is(err, strconv.ErrRange) {
				// Check the range in seconds: 1e300d would wrap a Duration.
				secs, err = f*unit.Seconds(), nil
				d = unixtime.Duration(secs)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%q is not a duration (try 4h, 1d or 1w)", v)
	}
	if err := transitions.SnoozeForRange().Check("--for", v, secs); err != nil {
		return err
	}
	*s = snoozeSpan(d)
	return nil
}

func (*snoozeSpan) Type() string { return "duration" }
