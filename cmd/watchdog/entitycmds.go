package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"watchdog/client"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
	"watchdog/unixtime"
	"watchdog/wire"
)

func newRegisterCmd() *cobra.Command {
	var db, server, file string
	c := &cobra.Command{
		Use:   "register --json FILE",
		Short: "Register (or update) an entity from a JSON document (- for stdin)",
		Example: `  watchdog register --json s-42.json
  echo '{"type":"session","id":"s-42","lifecycle":"running","pid":4242}' | watchdog register --json -
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog register --json s-42.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError("register needs --json FILE (or - for stdin)")
			}
			remote, err := resolveTarget(cmd, server)
			if err != nil {
				return err
			}
			var r io.Reader = cmd.InOrStdin()
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("read %s: %w", file, err)
				}
				defer f.Close()
				r = f
			}
			var body wire.Register
			if err := wire.Decode(r, &body, false); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			reg, err := body.Registration(transitions.ActorOrchestrator)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			// Validate before touching the database, so a bad document
			// cannot even create an empty one (nor reach the daemon).
			if err := transitions.CheckRegistration(reg); err != nil {
				return err
			}
			ctx := cmd.Context()
			if remote {
				// The document goes as written: the daemon completes a
				// pid's identity (host id, boot id, start time and ticks)
				// as for any API client, under its own configured host
				// id, which this process cannot know.
				return registerRemote(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), server, body)
			}
			st, err := openStore(ctx, db, true)
			if err != nil {
				return err
			}
			defer st.Close()
			w := newWriter(st)
			created, err := w.Register(ctx, reg)
			if err != nil {
				return err
			}
			typ, _ := transitions.CanonicalType(reg.Entity.Type)
			e, err := st.Get(ctx, typ, reg.Entity.ID)
			if err != nil {
				return err
			}
			verb := "updated"
			if created {
				verb = "registered"
			}
			ns := transitions.View(e, time.Now())
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s: %s\n", verb, e.Type, e.ID, transitions.Display(e, ns))
			warnLifecycleKept(cmd.ErrOrStderr(), created, body, e.LifecycleOr(""))
			return nil
		},
	}
	c.Flags().StringVar(&file, "json", "", "register document (SPEC wire shape); - reads stdin")
	addTargetFlags(c, &db, &server)
	return c
}

// warnLifecycleKept says so when a re-registration asked for a lifecycle
// the entity is not in: registering never moves a lifecycle (SPEC §9), and
// a silent "updated" would let the caller believe it did.
func warnLifecycleKept(w io.Writer, created bool, body wire.Register, now string) {
	if created || !body.Lifecycle.Set || body.Lifecycle.Null || body.Lifecycle.Value == now {
		return
	}
	fmt.Fprintf(w, "watchdog: note: the lifecycle stays %s: re-registering does not change it (use watchdog transition)\n", now)
}

// registerRemote is register through the daemon's API, printing the line
// the local path prints.
func registerRemote(ctx context.Context, out, errOut io.Writer, server string, body wire.Register) error {
	cl, err := dialServer(server)
	if err != nil {
		return err
	}
	e, created, err := cl.Register(ctx, body)
	if err != nil {
		return remoteError(server, err)
	}
	verb := "updated"
	if created {
		verb = "registered"
	}
	if _, err = fmt.Fprintf(out, "%s %s/%s: %s\n", verb, e.Type, e.ID, e.Display); err != nil {
		return err
	}
	if e.Lifecycle != nil {
		warnLifecycleKept(errOut, created, body, *e.Lifecycle)
	}
	return nil
}

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
			req := transitions.Request{
				Type: typ, ID: id, To: args[1], ExpectFrom: expectFrom,
				Actor: actor, Trigger: trigger, Timeout: unixtime.Duration(timeout), Elapsed: unixtime.Duration(elapsed),
			}
			if message != "" && reason == "" {
				return usageError("--message explains a reason code: give it with --reason CODE (see watchdog reasons)")
			}
			// reaper and exec are the daemon's and the wrapper's own
			// actors: a person at the command line is not either.
			if actor != transitions.ActorAdmin && actor != transitions.ActorOrchestrator {
				return usageError("--actor %q: want admin or orchestrator", actor)
			}
			if reason != "" {
				req.Reason = &state.StateReason{Code: state.ReasonCode(reason), Message: message}
				// The same limits locally as over HTTP.
				if err := wire.CheckReason(req.Reason); err != nil {
					return usageError("--message: %v", err)
				}
			}
			remote, err := resolveTarget(cmd, server)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var from, to string
			if remote {
				t := wire.Transition{
					To: req.To, ExpectFrom: expectFrom, Trigger: trigger,
					TimeoutSeconds: timeout, ElapsedSeconds: elapsed,
				}
				cl, err := dialServer(server)
				if err != nil {
					return err
				}
				// This command's default actor is admin, over HTTP too
				// (SPEC §9), except that with a token the token decides:
				// then an unset --actor sends none and the daemon records
				// the token's principal; an explicit one is a claim it may
				// refuse (admin is 403 with auth on).
				if cmd.Flags().Changed("actor") || !cl.HasToken() {
					t.Actor = actor
				}
				if req.Reason != nil {
					t.Reason = &wire.Reason{Code: reason, Message: message}
				}
				if from, to, err = transitionRemote(ctx, cl, server, typ, id, t); err != nil {
					return err
				}
			} else {
				st, err := openStore(ctx, db, false)
				if err != nil {
					return err
				}
				defer st.Close()
				res, err := newWriter(st).Transition(ctx, req)
				if err != nil {
					return err
				}
				from, to = res.Before.LifecycleOr("legacy"), res.After.LifecycleOr("legacy")
			}
			line := fmt.Sprintf("%s/%s: %s -> %s", typ, id, from, to)
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
	f.Float64Var(&timeout, "timeout-seconds", 0, "configured timeout, for timed_out")
	f.Float64Var(&elapsed, "elapsed-seconds", 0, "elapsed time, for timed_out (default: since start)")
	addTargetFlags(c, &db, &server)
	return c
}

// transitionRemote is transition through the daemon's API; it returns the
// lifecycles the "FROM -> TO" line prints.
func transitionRemote(ctx context.Context, cl *client.Client, server, typ, id string, t wire.Transition) (from, to string, err error) {
	from, to, err = remoteTransition(ctx, cl, typ, id, t)
	return from, to, remoteError(server, err)
}

func newHeartbeatCmd() *cobra.Command {
	var db, server, progress string
	c := &cobra.Command{
		Use:   "heartbeat TYPE/ID",
		Short: "Record a heartbeat (with an optional progress note) for an entity",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ, id, err := parseRef(args[0])
			if err != nil {
				return err
			}
			if err := (wire.Heartbeat{Progress: progress}).Check(); err != nil {
				return usageError("--progress: %v", err)
			}
			remote, err := resolveTarget(cmd, server)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if remote {
				cl, err := dialServer(server)
				if err != nil {
					return err
				}
				return remoteError(server, cl.Heartbeat(ctx, typ, id, progress))
			}
			st, err := openStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.RecordHeartbeat(ctx, typ, id, time.Now(), progress)
		},
	}
	c.Flags().StringVar(&progress, "progress", "", "short progress note, kept as evidence")
	addTargetFlags(c, &db, &server)
	return c
}

func newStatusCmd() *cobra.Command {
	var db, typ, severities string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Table of entities with their display chain, most severe first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if typ != "" {
				canon, ok := transitions.CanonicalType(typ)
				if !ok {
					return usageError("--type: unknown entity type %q (known: %s)", typ, strings.Join(transitions.Types(), ", "))
				}
				typ = canon
			}
			want, err := parseSeverities(severities)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := openStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.List(ctx, store.Filter{Type: typ})
			if err != nil {
				return err
			}
			now := time.Now()
			out := wire.EntityList{GeneratedAt: unixtime.Of(now), Items: []wire.Entity{}}
			for _, e := range list {
				var rows []store.AuditRow
				if asJSON {
					if rows, err = st.Transitions(ctx, e.Type, e.ID); err != nil {
						return err
					}
				}
				v := wire.FromEntity(e, rows, now)
				if len(want) > 0 && (v.State.Legacy() || !want[v.State.Severity]) {
					continue
				}
				out.Items = append(out.Items, v)
			}
			wire.SortEntities(out.Items)
			out.Total = len(out.Items)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			return printStatusTable(cmd.OutOrStdout(), out.Items, now)
		},
	}
	c.Flags().StringVar(&typ, "type", "", "only this entity type")
	c.Flags().StringVar(&severities, "severity", "", "only these severities, comma separated (critical,warning,info,neutral)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the entity read shape as JSON")
	addDBFlag(c, &db)
	return c
}

func parseSeverities(s string) (map[state.Severity]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[state.Severity]bool{}
	for _, p := range strings.Split(s, ",") {
		sev, ok := state.ParseSeverity(strings.TrimSpace(p))
		if !ok {
			return nil, usageError("--severity: %q is not one of critical, warning, info, neutral", p)
		}
		out[sev] = true
	}
	return out, nil
}

func printStatusTable(w io.Writer, items []wire.Entity, now time.Time) error {
	if len(items) == 0 {
		_, err := fmt.Fprintln(w, "no entities")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEVERITY\tTYPE\tID\tSTATE\tREASON\tUPDATED")
	for _, e := range items {
		sev := strings.ToUpper(string(e.State.Severity))
		if e.State.Legacy() {
			sev = "LEGACY"
		}
		reason := "-"
		if len(e.State.Reasons) > 0 {
			reason = string(e.State.Reasons[len(e.State.Reasons)-1].Code)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sev, e.Type, e.ID, e.Display, reason, ago(now.Sub(e.UpdatedAt.Time).Seconds()))
	}
	return tw.Flush()
}

// ago renders an age the way operators read it: 42s, 7m, 3h, 2d.
func ago(seconds float64) string {
	switch {
	case seconds < 0:
		return "now"
	case seconds < 60:
		return fmt.Sprintf("%ds ago", int(seconds))
	case seconds < 3600:
		return fmt.Sprintf("%dm ago", int(seconds/60))
	case seconds < 86400:
		return fmt.Sprintf("%dh ago", int(seconds/3600))
	}
	return fmt.Sprintf("%dd ago", int(seconds/86400))
}

func newReasonsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "reasons",
		Short: "Print the reason-code registry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := state.Reasons()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tMEANING")
			for _, r := range all {
				fmt.Fprintf(tw, "%s\t%s\n", r.Code, r.Doc)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func newGraphCmd() *cobra.Command {
	var dot bool
	c := &cobra.Command{
		Use:     "graph TYPE",
		Short:   "Print an entity type's lifecycle graph (--dot for Graphviz)",
		Example: "  watchdog graph agent --dot | dot -Tpng -o agent.png",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := transitions.Lookup(args[0])
			if err != nil {
				return usageError("%v", err)
			}
			if dot {
				fmt.Fprint(cmd.OutOrStdout(), g.DOT())
			} else {
				fmt.Fprint(cmd.OutOrStdout(), g.Text())
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dot, "dot", false, "print Graphviz DOT")
	return c
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "watchdog %s (%s, schema v%d)\n", version, goVersion(), store.SchemaVersion())
			return nil
		},
	}
}

func goVersion() string { return runtime.Version() }
