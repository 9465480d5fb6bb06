package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"watchdog/config"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/unixtime"
)

// oneShotSweepBudget bounds the sweep of a one-shot `reap`. The daemon's
// budget keeps one sweep from starving the next; a one-shot run has no
// next sweep to leave the rest to, so it may take longer.
const oneShotSweepBudget = time.Minute

// oneShot is what a one-shot command (`reap`, `probe --entity`) runs on:
// the store and a reaper for this host, with the thresholds of --config or
// the defaults.
type oneShot struct {
	st *store.SQLite
	rp *reaper.Reaper
}

// openOneShot loads the config (none = the defaults), opens the existing
// store and builds the reaper. The store is --db when given, else
// WATCHDOG_DB, else the config's store.dsn (whose default is the same
// ./watchdog.db as --db's): `reap --config /etc/watchdog/config.yaml` then
// acts on the daemon's own database.
func openOneShot(ctx context.Context, cmd *cobra.Command, cfgPath string) (*oneShot, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("config %s: %s", cfgPath, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	db := defaultDB
	if f := cmd.Flags().Lookup("db"); f != nil {
		db = f.Value.String()
	}
	if cfgPath != "" && !cmd.Flags().Changed("db") && os.Getenv("WATCHDOG_DB") == "" {
		db = cfg.Store.DSN
	}
	st, err := openStore(ctx, db, false)
	if err != nil {
		return nil, err
	}
	host := localHost()
	if cfg.HostID != "" {
		host.HostIDOverride = cfg.HostID
	}
	w := &transitions.Writer{Store: st, Now: time.Now, Ident: host}
	rp := &reaper.Reaper{Store: st, Writer: w, Prober: host, HostID: host.HostID(), Settings: oneShotSettings(cfg)}
	return &oneShot{st: st, rp: rp}, nil
}

// oneShotSettings are the daemon's settings with the one-shot sweep budget.
func oneShotSettings(cfg *config.Config) reaper.Settings {
	s := reaper.SettingsFrom(cfg)
	s.SweepBudget = oneShotSweepBudget
	return s
}

func newReapCmd() *cobra.Command {
	var db, cfgPath string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "reap [--dry-run] [--config FILE] [--json]",
		Short: "Run enforce_terminal and reap_phantoms once, then record what the probe finds",
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
The "waiting" lines list those, with the time left.

--dry-run (or reaper.dry_run in --config) prints what would be done and
writes nothing at all, not even the probe's findings: deaths no probe has
recorded yet are not listed (this run would not end them either).

Thresholds come from --config (the SPEC defaults without it); the database
is --db, else WATCHDOG_DB, else the config's store.dsn.`,
		Example: `  watchdog reap --dry-run
  watchdog reap --config /etc/watchdog/config.yaml
  watchdog reap --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			o, err := openOneShot(ctx, cmd, cfgPath)
			if err != nil {
				return err
			}
			defer o.st.Close()
			if dryRun {
				o.rp.Settings.DryRun = true
			}
			res, runErr := runReap(ctx, o)
			// What was done is printed even when a later step failed: those
			// writes happened.
			if err := printReap(cmd.OutOrStdout(), res, asJSON); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
			return runErr
		},
	}
	addDBFlag(c, &db)
	c.Flags().StringVar(&cfgPath, "config", "", "YAML config `FILE` for thresholds, reaper settings, host_id and store.dsn (default: the SPEC defaults)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be done and write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// reapAction is one decided lifecycle change, as printed.
type reapAction struct {
	Job        string `json:"job"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	From       string `json:"from"`
	To         string `json:"to"`
	ReasonCode string `json:"reason_code"`
	Detail     string `json:"detail"`
	// Terminal: To ends the entity (else it is blocked, say).
	Terminal bool   `json:"terminal"`
	Applied  bool   `json:"applied"`
	Skipped  string `json:"skipped,omitempty"`
}

// reapWaiting is an open entity whose process is recorded dead but that
// this run did not end.
type reapWaiting struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	DeadSince unixtime.Time `json:"dead_since"`
	// EndsAfter is when terminal_grace runs out; in the past when the
	// grace has run out but the death could not be confirmed now.
	EndsAfter unixtime.Time `json:"ends_after"`
	Why       string        `json:"why"`
}

// reapResult is what one `reap` did.
type reapResult struct {
	DryRun  bool          `json:"dry_run"`
	Actions []reapAction  `json:"actions"`
	Waiting []reapWaiting `json:"waiting"`
	// Probed and Recorded are the closing sweep's (0 in a dry run).
	Probed    int  `json:"probed"`
	Recorded  int  `json:"recorded"`
	Truncated bool `json:"truncated"`
	// TerminalGrace is the grace applied, in seconds.
	TerminalGrace float64 `json:"terminal_grace"`
}

// runReap runs enforce_terminal, reap_phantoms and (unless dry) one sweep,
// in that order. Acting before probing is what makes a death first seen by
// this run wait out its grace: the jobs see only deaths recorded before.
func runReap(ctx context.Context, o *oneShot) (reapResult, error) {
	rp := o.rp
	start := time.Now()
	res := reapResult{DryRun: rp.Settings.DryRun, Actions: []reapAction{}, Waiting: []reapWaiting{}, TerminalGrace: rp.Settings.TerminalGrace.Seconds()}
	acted := map[string]bool{}
	for _, job := range []func(context.Context) (reaper.Report, error){rp.EnforceTerminal, rp.ReapPhantoms} {
		rep, err := job(ctx)
		res.Truncated = res.Truncated || rep.Truncated
		for _, a := range rep.Actions {
			res.Actions = append(res.Actions, reapAction{
				Job: rep.Job, Type: a.Type, ID: a.ID, From: a.From, To: a.To, ReasonCode: string(a.Reason),
				Detail: a.Detail, Terminal: isTerminal(a.Type, a.To), Applied: a.Applied, Skipped: a.Skipped,
			})
			acted[a.Type+"/"+a.ID] = true
		}
		if err != nil {
			return res, err
		}
	}
	if !res.DryRun {
		rep, err := rp.Sweep(ctx)
		res.Probed, res.Recorded = rep.Checked, rep.Written
		if err != nil {
			return res, err
		}
	}
	waiting, err := deadAndWaiting(ctx, o, acted, start, res.Truncated)
	res.Waiting = waiting
	return res, err
}

// deadAndWaiting lists this host's open entities whose process is recorded
// dead and that were not acted on: first seen dead by this run (at or
// after start), within terminal_grace, or past it with a death that could
// not be confirmed now (liveness unknown) or that max_per_run left for
// the next run.
func deadAndWaiting(ctx context.Context, o *oneShot, acted map[string]bool, start time.Time, truncated bool) ([]reapWaiting, error) {
	list, err := o.st.List(ctx, store.Filter{HostID: o.rp.HostID, OpenOnly: true})
	if err != nil {
		return nil, fmt.Errorf("list dead entities: %w", err)
	}
	grace := o.rp.Settings.TerminalGrace
	now := time.Now()
	out := []reapWaiting{}
	for _, e := range list {
		g, err := transitions.Lookup(e.Type)
		if err != nil || g.DeadProcessTerminal == "" || e.DeadSince.IsZero() || acted[e.Type+"/"+e.ID] {
			continue
		}
		dead := e.DeadSince
		ends := dead.Add(grace)
		w := reapWaiting{Type: e.Type, ID: e.ID, DeadSince: unixtime.Of(dead), EndsAfter: unixtime.Of(ends)}
		switch left := ends.Sub(now); {
		case !dead.Before(start):
			w.Why = fmt.Sprintf("process first seen dead by this run: terminal_grace %s starts now, a later reap (or the daemon) ends it", grace)
		case left > 0:
			w.Why = fmt.Sprintf("process dead for %s, within terminal_grace %s: a later reap (or the daemon) ends it in %s",
				now.Sub(dead).Round(time.Second), grace, left.Round(time.Second))
		case truncated:
			w.Why = fmt.Sprintf("process dead for %s, past terminal_grace: not reached before reaper.max_per_run, or not confirmed dead now",
				now.Sub(dead).Round(time.Second))
		default:
			w.Why = fmt.Sprintf("process recorded dead %s ago, but its death could not be confirmed now (liveness unknown): not ended",
				now.Sub(dead).Round(time.Second))
		}
		out = append(out, w)
	}
	return out, nil
}

func isTerminal(typ, lifecycle string) bool {
	g, err := transitions.Lookup(typ)
	return err == nil && g.IsTerminal(lifecycle)
}

// printReap prints one line per action, one per waiting entity, and a
// summary; or the whole result as JSON.
func printReap(w io.Writer, res reapResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	var b strings.Builder
	var done, skipped int
	for _, a := range res.Actions {
		base, past := "move", "moved"
		if a.Terminal {
			base, past = "end", "ended"
		}
		var verb string
		switch {
		case res.DryRun:
			verb = "would " + base
		case a.Applied:
			verb = past
			done++
		default:
			verb = "skipped"
			skipped++
		}
		fmt.Fprintf(&b, "%s %s/%s: %s -> %s (%s)", verb, a.Type, a.ID, a.From, a.To, a.ReasonCode)
		if a.Detail != "" {
			b.WriteString(": " + a.Detail)
		}
		if !res.DryRun && !a.Applied && a.Skipped != "" {
			b.WriteString(" [" + a.Skipped + "]")
		}
		b.WriteByte('\n')
	}
	for _, wt := range res.Waiting {
		fmt.Fprintf(&b, "waiting %s/%s: %s\n", wt.Type, wt.ID, wt.Why)
	}
	if res.DryRun {
		fmt.Fprintf(&b, "dry run: %d would change, %d dead and waiting; nothing written\n", len(res.Actions), len(res.Waiting))
	} else {
		fmt.Fprintf(&b, "reap: %d changed, %d lost to a racing writer, %d dead and waiting; %d entities probed, %d with new findings recorded\n",
			done, skipped, len(res.Waiting), res.Probed, res.Recorded)
	}
	if res.Truncated {
		b.WriteString("stopped at reaper.max_per_run: run again for the rest\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
