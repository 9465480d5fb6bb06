package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"watchdog/cmd/watchdog/internal/runner"
	"watchdog/transitions"
)

func newExecCmd() *cobra.Command {
	var o runner.Options
	var db, server string
	c := &cobra.Command{
		Use:   "exec [flags] -- CMD [ARGS...]",
		Short: "Run a command as a watched entity and record how it ended",
		Long: `exec registers the command as an entity (pid, start time, host and boot id,
timeout, artifact contract), runs it, forwards SIGINT, SIGTERM and SIGHUP to
it (not a Ctrl-C at the terminal: that already reaches the child, and a
second SIGINT makes many programs quit without cleaning up), enforces --timeout (SIGTERM, then SIGKILL after --kill-after), and
records its end through the write path:

  exit 0                 completed (failed with run.failed.artifact_contract
                         when a required artifact is missing or invalid)
  exit 124 or timeout    timed_out (run.timed_out.deadline, with the timeout
                         when known and the elapsed time)
  exit 130 or SIGINT     cancelled (run.cancelled.sigint)
  exit 143 or SIGTERM    cancelled (run.cancelled.sigterm)
                         (a turn: interrupted; a subagent's SIGINT:
                         interrupted; both read neutral)
  other exit or signal   failed (run.failed.exit_nonzero, run.failed.signal)

exec is its child's subreaper: what the child leaves running (a background
job, a double-forked daemon) is reparented to exec, and at the child's end
exec ends it, SIGTERM then SIGKILL after --kill-after, before it records
the end, which names each such process (--kill-leftovers=false leaves them
running: the entity then reports them, run.health.leftover_processes).
The child's output passes through exec unchanged; the last 4 KiB of its
stderr (and of stdout with --keep-stdout) are stored with the end as
evidence, nothing else of it. A terminal is left to the child as it is,
and nothing of it is kept.

exec exits with the child's code (124 on timeout, 128+N for death by
signal N); its own failures use 125 (bad flags), 126 (cannot run) and 127
(not found), as timeout(1) does. When the store or the daemon cannot be
reached, the command still runs, unwatched, and exec says so on stderr.`,
		Example: `  watchdog exec --id nightly-build --timeout 2h -- make release
  watchdog exec --type session --id s-42 --artifacts-root /srv/runs/s-42 --artifact review.md -- ./review.sh
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog exec --id s-43 -- python3 agent.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(runner.ExitUsage, errors.New("exec needs a command after -- (watchdog exec [flags] -- CMD [ARGS...])"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The writing commands' --db/--server rule; a conflict exits 125.
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					err = ee.err
				}
				return withCode(runner.ExitUsage, err)
			}
			open := func(ctx context.Context) (runner.Sink, error) { return to.Open(ctx, true, true) }
			stdio := runner.Stdio{Stdin: cmd.InOrStdin(), Stdout: rawWriter(cmd.OutOrStdout()), Stderr: rawWriter(cmd.ErrOrStderr())}
			return runner.Run(cmd.Context(), o, args, open, stdio)
		},
	}
	// Flags after the command belong to the command.
	c.Flags().SetInterspersed(false)
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(runner.ExitUsage, fmt.Errorf("%v (see %s --help)", err, c.CommandPath()))
	})
	f := c.Flags()
	f.StringVar(&o.Type, "type", "session", "entity type of the run (a type with a running state, e.g. session, invocation, workflow)")
	f.StringVar(&o.ID, "id", "", "entity id (default exec-<pid>-<start time>)")
	f.StringVar(&o.Label, "label", "", "human label (default the command line)")
	f.Var(newDurationFlag(&o.Timeout, "--timeout", transitions.TimeoutRange()), "timeout", "stop the command after this long, at most a year (SIGTERM, then SIGKILL after --kill-after); 0 = no timeout")
	f.DurationVar(&o.KillAfter, "kill-after", runner.DefaultKillAfter, "after the timeout's SIGTERM (and the leftovers'), wait this long before SIGKILL")
	f.StringVar(&o.HeartbeatFile, "heartbeat-file", "", "file whose mtime the command touches as its heartbeat")
	f.StringVar(&o.ArtifactsRoot, "artifacts-root", "", "`DIR` the artifact paths are relative to (default the current directory)")
	f.StringArrayVar(&o.Artifacts, "artifact", nil, "a required, non-empty file under the artifacts root (a glob matches if any file does); repeatable")
	f.StringVar(&o.Contract, "contract", "", "artifact contract `FILE` (JSON or YAML, {\"artifacts\": [...]})")
	f.BoolVar(&o.KillLeftovers, "kill-leftovers", true, "at the command's end, end the processes it left running (SIGTERM, then SIGKILL after --kill-after) before recording the end; =false reports them on the entity instead")
	f.BoolVar(&o.KeepStderr, "keep-stderr", true, "store the last 4 KiB of the command's stderr with its end (not from a terminal)")
	f.BoolVar(&o.KeepStdout, "keep-stdout", false, "store the last 4 KiB of the command's stdout with its end too")
	addDBFlag(c, &db)
	addServerFlag(c, &server)
	return c
}
