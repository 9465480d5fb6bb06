package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/transitions"
)

// triageBy is who a dismissal made from this command line is recorded
// as: the API records "operator" for its own, and a person at a terminal
// is one.
const triageBy = "operator"

// newSnoozeCmd is `watchdog snooze FINGERPRINT [--for 1d]` (docs/reference/cli.md): hide
// one attention item for a while.
func newSnoozeCmd() *cobra.Command {
	var db, server, configPath string
	span := snoozeSpan(attention.SnoozeFor)
	c := &cobra.Command{
		Use:   "snooze FINGERPRINT",
		Short: "Hide an attention item for a while (default 1d), until its entity's status changes",
		Long: `Hide the attention item FINGERPRINT (TYPE:ID:REASON_CODE, as watchdog
attention prints it) for --for, or until its entity's lifecycle changes,
whichever comes first. The item must be in the queue now: a fingerprint
of a condition that cleared, aged out or never existed is refused (exit 1),
so a typo cannot silence a future item. If the condition clears and comes
back, it is a new item the snooze does not hide.

Through a daemon with --server (WATCHDOG_SERVER; POST /api/attention/snooze,
authenticated as the writing commands are), or into a database: --db, else
WATCHDOG_DB, else the store.dsn of the daemon's config (--config, else
$WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists), whose
failure window decides what is in the queue.`,
		Example: `  watchdog snooze session:s-42:run.health.stalled
  watchdog snooze play:p-7:run.failed.exit_nonzero --for 4h --server http://127.0.0.1:9715`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return triage(cmd, args[0], time.Duration(span), db, server)
		},
	}
	c.Flags().Var(&span, "for", "how long to hide the item: a duration like 90m or 4h, or days like 1d")
	addTriageFlags(c, &db, &server, &configPath)
	return c
}

// newDismissCmd is `watchdog dismiss FINGERPRINT` (docs/reference/cli.md): hide one
// attention item until its entity's status changes.
func newDismissCmd() *cobra.Command {
	var db, server, configPath string
	c := &cobra.Command{
		Use:   "dismiss FINGERPRINT",
		Short: "Hide an attention item until its entity's status changes",
		Long: `Dismiss the attention item FINGERPRINT (TYPE:ID:REASON_CODE, as watchdog
attention prints it): it stays hidden until its entity's lifecycle
changes. The item must be in the queue now (else exit 1), and a
recurrence of the condition is a new item the dismissal does not hide.

Through a daemon with --server (WATCHDOG_SERVER; POST /api/attention/dismiss,
authenticated as the writing commands are), or into a database: --db, else
WATCHDOG_DB, else the store.dsn of the daemon's config (--config, else
$WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists), whose
failure window decides what is in the queue.`,
		Example: `  watchdog dismiss session:s-42:run.delivery.missing
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog dismiss agent:a-1:run.health.stalled`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return triage(cmd, args[0], 0, db, server)
		},
	}
	addTriageFlags(c, &db, &server, &configPath)
	return c
}

func addTriageFlags(c *cobra.Command, db, server, configPath *string) {
	addTargetFlags(c, db, server)
	c.Flags().Lookup("server").Usage = strings.Replace(c.Flags().Lookup("server").Usage, "write through", "snooze or dismiss through", 1)
	addConfigFlag(c, configPath)
	c.Flags().Lookup("config").Usage += "; not with --server"
}

// triage snoozes (span > 0) or dismisses fp through the target the flags
// choose, and prints one line saying what it did.
func triage(cmd *cobra.Command, fp string, span time.Duration, db, server string) error {
	if _, _, _, err := attention.ParseFingerprint(fp); err != nil {
		return usageError("%v (copy it from watchdog attention)", err)
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
		// The item must be in the queue the daemon serves: its failure
		// window, its database.
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
	d := attention.Dismissing{Fingerprint: fp, Until: until, ClearOnStatusChange: true, By: triageBy}
	if err := t.Dismiss(ctx, d, now, window); err != nil {
		return to.Explain(err)
	}
	if !remote {
		set.printNote(cmd.ErrOrStderr())
	}
	if span > 0 {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "snoozed %s until %s (or until its status changes)\n", fp, until.Format("2006-01-02 15:04 MST"))
	} else {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "dismissed %s until its status changes\n", fp)
	}
	return err
}

// snoozeSpan is --for: a Go duration or a number of days ("1d", "1.5d"),
// positive.
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
	if days, ok := strings.CutSuffix(v, "d"); ok && err != nil {
		var n float64
		if n, err = strconv.ParseFloat(days, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			// The range is checked on the seconds before they become a
			// Duration: 1e300d would wrap round.
			secs, err = n*(24*time.Hour).Seconds(), nil
			d = unixtime.Duration(secs)
		}
	}
	if err != nil {
		return fmt.Errorf("%q is not a duration (try 4h or 1d)", v)
	}
	if err := transitions.SnoozeForRange().Check("--for", v, secs); err != nil {
		return err
	}
	*s = snoozeSpan(d)
	return nil
}

func (*snoozeSpan) Type() string { return "duration" }
