package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"watchdog/cmd/watchdog/internal/target"
	"watchdog/daemon"
	"watchdog/reaper"
	"watchdog/store"
)

// oneShot is what a one-shot command (`reap`, `probe --entity`) runs on:
// the store and a reaper for this host, with the daemon's settings.
type oneShot struct {
	st store.Backend
	rp *reaper.Reaper
	// set is where the settings came from; its note is printed after the run.
	set settings
}

// openOneShot resolves the daemon's settings, opens the existing store and
// builds the reaper with the daemon's thresholds and host_id, so a
// one-shot run judges as the daemon does.
func openOneShot(ctx context.Context, cmd *cobra.Command) (*oneShot, error) {
	db := defaultDB
	if f := cmd.Flags().Lookup("db"); f != nil {
		db = f.Value.String()
	}
	set, db, err := localSettings(cmd, db)
	if err != nil {
		return nil, err
	}
	st, err := target.OpenStore(ctx, db, false)
	if err != nil {
		return nil, err
	}
	cfg := set.cfg
	return &oneShot{st: st, rp: reaper.NewOneShot(st, localHost(), daemon.ReaperSettings(cfg), cfg.HostID), set: set}, nil
}

func newReapCmd() *cobra.Command {
	var db, cfgPath string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "reap [--dry-run] [--config FILE] [--json]",
		Short: "Run enforce_terminal and reap_phantoms once, record what the probe finds, and list every dead process's fate",
		Long: `Run the reaper's jobs once, as the daemon would: enforce_terminal (end an
entity whose process has been dead for terminal_grace without recording its
own end) and reap_phantoms (end long-dead or orphaned entities, close
orphaned teams, block plays whose dependency failed, fail shows whose
critical path failed). Only entities of this host are touched; every change
goes through the validated write path with actor "reaper"; an entity whose
process is alive, or whose liveness is unknown, is never ended.

Deaths count from when a probe first saw them (the daemon's sweep, or
'watchdog probe --entity'). reap acts on the deaths recorded before it ran,
then probes every entity of this host and records what it finds, like one
sweep. So a death this run discovers is recorded now and its terminal_grace
starts now: a first reap does not end it, a later one (or the daemon) will.
The "waiting" lines list those, with their fate and the time.

Every dead process gets a fate. A type whose lifecycle has an end for a
dead process (a session, an invocation, ...) is ended. The others (a play,
a show, a team) are never given an outcome the watchdog would have to
invent: past terminal_grace they are flagged, critical in the attention
queue (system.health.process_dead_unowned) with the command that records
an end; the "flagged" lines list them.

--dry-run (or reaper.dry_run in --config) takes the same steps, keeps its
probe's findings in memory, prints what would be done and writes nothing at
all: on a store no sweep has seen, it lists every dead process with its fate.

Thresholds, host_id and store.dsn come from the daemon's config: --config,
else $WATCHDOG_CONFIG, else ` + defaultConfigPath + ` when it exists (the
systemd unit's); without one it judges with the default thresholds and says so
in one line on stderr. A config that exists but is invalid is an error.
The database is --db, else WATCHDOG_DB, else the config's store.dsn.`,
		Example: `  watchdog reap --dry-run
  watchdog reap --config /etc/watchdog/config.yaml
  watchdog reap --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o, err := openOneShot(ctx, cmd)
			if err != nil {
				return err
			}
			defer o.st.Close()
			o.set.printNote(cmd.ErrOrStderr())
			if dryRun {
				o.rp.Settings.DryRun = true
			}
			res, runErr := o.rp.RunOnce(ctx)
			// Printed even when a later step failed: those writes happened.
			if err := output(cmd.OutOrStdout(), asJSON, res, res.Text); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			return runErr
		},
	}
	addDBFlag(c, &db)
	addConfigFlag(c, &cfgPath)
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done and write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
