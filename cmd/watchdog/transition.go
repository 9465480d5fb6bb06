package main

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

func newTransitionCmd() *cobra.Command {
	var db, server, reason, message, actor, expectFrom, trigger string
	var timeout, elapsed float64
	c := &cobra.Command{
		Use:   "transition TYPE/ID TO",
		Short: "Move an entity to another lifecycle state through the validated write path",
		Example: `  watchdog transition session/s-42 aborted --reason run.aborted.operator --message "stuck on review"
  watchdog transition play/p-1 queued --actor orchestrator
  WATCHDOG_SERVER=http://127.0.0.1:9715 WATCHDOG_TOKEN_FILE=/run/agents/token watchdog transition session/s-42 completed`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ, id, err := parseRef(args[0])
			if err != nil {
				return err
			}
			if message != "" && reason == "" {
				return usageError("--message explains a reason code: give it with --reason CODE (see watchdog reasons)")
			}
			// reaper and exec are the daemon's and the wrapper's own actors.
			if actor != transitions.ActorAdmin && actor != transitions.ActorOrchestrator {
				return usageError("--actor %q: want admin or orchestrator", actor)
			}
			t := wire.Transition{
				To: args[1], ExpectFrom: expectFrom, Trigger: trigger,
				TimeoutSeconds: timeout, ElapsedSeconds: elapsed,
			}
			if reason != "" {
				// The same limits locally as over HTTP.
				if err := wire.CheckReason(&state.StateReason{Code: state.ReasonCode(reason), Message: message}); err != nil {
					return usageError("--message: %v", err)
				}
				t.Reason = &wire.Reason{Code: reason, Message: message}
			}
			// The default actor is admin, but with a token the token decides: an unset
			// --actor then claims none (docs/reference/cli.md).
			if cmd.Flags().Changed("actor") {
				t.Actor = actor
			}
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				return err
			}
			tg, err := to.Open(cmd.Context(), false, false)
			if err != nil {
				return err
			}
			defer tg.Close()
			res, err := tg.Transition(cmd.Context(), typ, id, t, actor)
			if err != nil {
				return to.Explain(err)
			}
			now := "legacy"
			if res.Lifecycle != nil {
				now = *res.Lifecycle
			}
			// An older daemon leaves "from" out: fall back to the expectation.
			from := cmp.Or(res.From, expectFrom, "?")
			line := fmt.Sprintf("%s/%s: %s -> %s", typ, id, from, now)
			if reason != "" {
				line += " (" + reason + ")"
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&reason, "reason", "", "reason code (see watchdog reasons); required for failed, aborted, cancelled, timed_out, ...")
	f.StringVar(&message, "message", "", "human message for the reason")
	f.StringVar(&actor, "actor", transitions.ActorAdmin, "who asks: admin or orchestrator. With --server and a token (WATCHDOG_TOKEN_FILE) and no --actor "+
		"the token decides (orchestrator); with auth on, admin is refused")
	f.StringVar(&expectFrom, "expect-from", "", "apply only if the entity is still in this state (compare-and-set)")
	f.StringVar(&trigger, "trigger", "", "why it happened: "+strings.Join(transitions.Triggers, ", "))
	f.Var(newSecondsFlag(&timeout, "--timeout-seconds", transitions.TimeoutRange()), "timeout-seconds", "configured timeout, for timed_out (at most a year)")
	f.Var(newSecondsFlag(&elapsed, "--elapsed-seconds", transitions.ElapsedRange()), "elapsed-seconds", "elapsed time, for timed_out (default: since start)")
	addTargetFlags(c, &db, &server)
	return c
}
