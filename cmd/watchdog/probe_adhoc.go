package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"watchdog/judge"
	"watchdog/probe"
	"watchdog/wire"
)

// probeEntityFunc probes a registered entity (--entity) and returns the
// exit code; a variable so tests can watch the flags without a store.
var probeEntityFunc = probeEntity

type probeOptions struct {
	pid           string
	startTime     string
	heartbeat     string
	idleAfter     string
	stalledAfter  string
	artifactsRoot string
	artifacts     []string
	contract      string
	entity        string
	db            string
	config        string
	record        bool
	ended         bool
	asJSON        bool
}

// probeFail is a probe that could not decide: exit 3 with one error line.
func probeFail(format string, args ...any) error {
	return withCode(probe.ExitUnknown, fmt.Errorf("probe: "+format, args...))
}

func newProbeCmd() *cobra.Command {
	var o probeOptions
	cmd := &cobra.Command{
		Use:   "probe --pid N [flags] | probe --entity TYPE/ID [--db FILE] [--config FILE] [--record] [--json]",
		Short: "Probe a process (no database needed) or a registered entity now",
		Long: `Probe a process now and classify it like the daemon would: liveness (with
its start time as identity), heartbeat age, artifact contract. As for the
daemon, the artifacts are due when the run ends: while the process is
alive they are "not due yet" (--ended judges them now); once it is gone
they are judged.

With --entity, probe a registered entity of this host with what the store
recorded about it (pid and start time, heartbeat, artifacts, lock files)
and print the verdict the daemon would reach now, with the daemon's
thresholds (its config: --config, else $WATCHDOG_CONFIG, else
` + defaultConfigPath + ` when it exists; the default thresholds without one,
said in one line on stderr). It is read-only: nothing is recorded, so no
dismissal or snooze is affected, and the notes say what changed since the
last judgement, what the daemon would do (end or reap it) and when it
judges next. --record records the findings as the daemon's sweep would
(only when health, delivery or reasons changed; a first-seen death starts
terminal_grace then). An entity of another host is not probed (exit 3).

The first line is "SEVERITY - display chain", then the reasons and the
evidence; --json prints the normalized state instead.

Exit codes, as a monitoring plugin: 0 neutral or info, 1 warning,
2 critical, 3 could not decide (bad arguments, permission denied, pid
liveness unknown; with --entity: health unknown, an entity of another
host, a legacy entity or a schedule).`,
		Example: `  watchdog probe --pid 4242 --start-time 1716517000.12 --heartbeat /run/agents/s-42.hb
  watchdog probe --pid 4242 --artifacts-root /srv/runs/s-42 --artifact review.md --artifact 'logs/*.txt'
  watchdog probe --pid 4242 --artifacts-root /srv/runs/s-42 --artifact review.md --ended
  watchdog probe --pid 4242 --contract contract.yaml --json
  watchdog probe --entity session/s-42 --db /var/lib/watchdog/watchdog.db
  watchdog probe --entity session/s-42 --record`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return probeFail("unexpected argument %q (probe takes flags only)", args[0])
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := runProbe(cmd, o)
			if err != nil {
				return err
			}
			if code != probe.ExitOK {
				return withCode(code, nil) // the output says it all
			}
			return nil
		},
	}
	// Bad flags exit 3, "could not decide": a monitoring system reads 2 as critical.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return probeFail("%v (see %s --help)", err, c.CommandPath())
	})
	f := cmd.Flags()
	f.StringVar(&o.pid, "pid", "", "process id to probe (required unless --entity)")
	f.StringVar(&o.startTime, "start-time", "", "the process's recorded start time, Unix seconds (a fraction allowed); a different start time means the pid was reused")
	f.StringVar(&o.heartbeat, "heartbeat", "", "heartbeat `FILE` whose mtime is the last sign of life")
	f.StringVar(&o.idleAfter, "idle-after", "", "heartbeat age that makes the process idle (default 10m)")
	f.StringVar(&o.stalledAfter, "stalled-after", "", "heartbeat age that makes the process stalled (default 60m)")
	f.StringVar(&o.artifactsRoot, "artifacts-root", "", "`DIR` the artifact paths are relative to (default the current directory)")
	f.StringArrayVar(&o.artifacts, "artifact", nil, "a required, non-empty file under the artifacts root (a glob matches if any file does); repeatable")
	f.StringVar(&o.contract, "contract", "", "artifact contract `FILE` (JSON or YAML, {\"artifacts\": [...]} as at registration)")
	f.StringVar(&o.entity, "entity", "", "probe the registered entity `TYPE/ID` instead of a bare pid")
	addDBFlag(cmd, &o.db)
	addConfigFlag(cmd, &o.config)
	f.Lookup("config").Usage = "with --entity: " + f.Lookup("config").Usage
	f.BoolVar(&o.record, "record", false, "with --entity: record the findings as the daemon's sweep would (default: read-only, nothing is written)")
	f.BoolVar(&o.ended, "ended", false, "the run is over: judge the artifact contract now (by default the artifacts are due when the process is gone, as the daemon judges them at the run's end)")
	f.BoolVar(&o.asJSON, "json", false, "print the normalized state as JSON")
	return cmd
}

// runProbe returns the exit code of a probe that decided, or the error of
// one that could not.
func runProbe(cmd *cobra.Command, o probeOptions) (int, error) {
	if o.entity != "" {
		if o.pid != "" || o.heartbeat != "" || o.startTime != "" || len(o.artifacts) > 0 || o.contract != "" || o.artifactsRoot != "" || o.ended {
			return 0, probeFail("--entity probes what the store recorded; it takes no --pid, --start-time, --heartbeat, --ended or artifact flags")
		}
		if o.idleAfter != "" || o.stalledAfter != "" {
			// The findings are stored: other thresholds than the daemon's would flip
			// the entity back and forth.
			return 0, probeFail("--entity takes the daemon's thresholds from --config (else %s, else %s), not --idle-after or --stalled-after", configEnv, defaultConfigPath)
		}
		return probeEntityFunc(cmd, o.entity, o.asJSON), nil
	}
	if cmd.Flags().Changed("db") || o.config != "" || o.record {
		return 0, probeFail("--db, --config and --record go with --entity; a --pid probe needs no database")
	}

	subj, th, err := o.subject()
	if err != nil {
		return 0, err
	}
	v := judge.Bare(cmd.Context(), probe.NewHost(), subj, th, o.ended, time.Now())
	return printVerdict(cmd.OutOrStdout(), v, o.asJSON, probeFail)
}

// printVerdict prints a probe's verdict and returns its exit code; fail
// words a failed write.
func printVerdict(w io.Writer, v probe.Verdict, asJSON bool, fail func(string, ...any) error) (int, error) {
	v = v.Rendered()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v.State); err != nil {
			return 0, fail("write output: %v", err)
		}
		return v.ExitCode(), nil
	}
	if _, err := io.WriteString(w, v.Text()); err != nil {
		return 0, fail("write output: %v", err)
	}
	return v.ExitCode(), nil
}

// subject turns the flags into what the probe looks at, checking each.
func (o probeOptions) subject() (probe.Subject, judge.Thresholds, error) {
	t, th, err := judge.AdHoc{PID: o.pid, StartTime: o.startTime, Heartbeat: o.heartbeat, IdleAfter: o.idleAfter, StalledAfter: o.stalledAfter}.Subject()
	if err != nil {
		return t, th, probeFail("%v", err)
	}
	specs, root, err := wire.ContractFromFlags(o.artifacts, o.contract, o.artifactsRoot)
	if err != nil {
		return t, th, probeFail("%v", err)
	}
	t.ArtifactsRoot, t.Artifacts = root, specs
	return t, th, nil
}
