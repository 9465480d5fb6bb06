package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/unixtime"
	"watchdog/wire"
)

// Exit codes of exec's own failures, as GNU timeout and env use them, so a
// wrapper's failure never passes for one of the child's own exit codes.
const (
	execExitUsage       = 125 // exec itself failed: bad flags, bad contract
	execExitCannotRun   = 126 // the command exists but cannot be run
	execExitNotFound    = 127 // the command does not exist
	defaultExecKillWait = 10 * time.Second
)

type execOptions struct {
	typ, id, label string
	timeout        time.Duration
	killAfter      time.Duration
	heartbeatFile  string
	artifactsRoot  string
	artifacts      []string
	contract       string
	db, server     string
}

func newExecCmd() *cobra.Command {
	var o execOptions
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
  exit 130 or SIGINT     aborted (run.aborted.sigint)
  exit 143 or SIGTERM    cancelled (run.cancelled.sigterm)
  other exit or signal   failed (run.failed.exit_nonzero, run.failed.signal)

exec exits with the child's code (124 on timeout, 128+N for death by
signal N); its own failures use 125 (bad flags), 126 (cannot run) and 127
(not found), as timeout(1) does. When the store or the daemon cannot be
reached, the command still runs, unwatched, and exec says so on stderr.`,
		Example: `  watchdog exec --id nightly-build --timeout 2h -- make release
  watchdog exec --type session --id s-42 --artifacts-root /srv/runs/s-42 --artifact review.md -- ./review.sh
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog exec --id s-43 -- python3 agent.py`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(execExitUsage, errors.New("exec needs a command after -- (watchdog exec [flags] -- CMD [ARGS...])"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The same --db/--server rule as the other writing commands;
			// a conflict is exec's own usage error (125).
			remote, err := resolveTarget(cmd, o.server)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					err = ee.err
				}
				return withCode(execExitUsage, err)
			}
			if !remote {
				o.server = ""
			}
			return runExec(cmd.Context(), o, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	// Flags after the command belong to the command.
	c.Flags().SetInterspersed(false)
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(execExitUsage, fmt.Errorf("%v (see %s --help)", err, c.CommandPath()))
	})
	f := c.Flags()
	f.StringVar(&o.typ, "type", "session", "entity type of the run (a type with a running state, e.g. session, invocation, workflow)")
	f.StringVar(&o.id, "id", "", "entity id (default exec-<pid>-<start time>)")
	f.StringVar(&o.label, "label", "", "human label (default the command line)")
	f.DurationVar(&o.timeout, "timeout", 0, "stop the command after this long (SIGTERM, then SIGKILL after --kill-after); 0 = no timeout")
	f.DurationVar(&o.killAfter, "kill-after", defaultExecKillWait, "after the timeout's SIGTERM, wait this long before SIGKILL")
	f.StringVar(&o.heartbeatFile, "heartbeat-file", "", "file whose mtime the command touches as its heartbeat")
	f.StringVar(&o.artifactsRoot, "artifacts-root", "", "`DIR` the artifact paths are relative to (default the current directory)")
	f.StringArrayVar(&o.artifacts, "artifact", nil, "a required, non-empty file under the artifacts root (a glob matches if any file does); repeatable")
	f.StringVar(&o.contract, "contract", "", "artifact contract `FILE` (JSON or YAML, {\"artifacts\": [...]})")
	addDBFlag(c, &o.db)
	addServerFlag(c, &o.server)
	return c
}

// execPlan is what exec will register and how it will judge the end,
// decided entirely before the command starts, so bad input changes nothing.
type execPlan struct {
	typ   string
	graph *transitions.Graph
	reg   wire.Register
	specs []state.ArtifactSpec
	root  string
}

func planExec(o execOptions, args []string) (execPlan, error) {
	bad := func(format string, a ...any) (execPlan, error) {
		return execPlan{}, withCode(execExitUsage, fmt.Errorf(format, a...))
	}
	typ, ok := transitions.CanonicalType(o.typ)
	if !ok {
		return bad("unknown entity type %q (known: %s)", o.typ, strings.Join(transitions.Types(), ", "))
	}
	g, _ := transitions.Lookup(typ)
	if !g.HasState("running") || transitions.ExitTarget(g, "running", "completed") == "" {
		return bad("--type %s has no running state to wrap a command in (use one of: %s)", typ, strings.Join(execTypes(), ", "))
	}
	if o.id != "" {
		if err := transitions.ValidateID(o.id); err != nil {
			return bad("--id: %v", err)
		}
	}
	if o.timeout < 0 || o.killAfter < 0 {
		return bad("--timeout and --kill-after must not be negative")
	}
	label := o.label
	if label == "" {
		label = strings.Join(args, " ")
		if len(label) > 200 {
			label = label[:200]
		}
	}
	p := execPlan{typ: typ, graph: g}
	for _, a := range o.artifacts {
		p.specs = append(p.specs, state.ArtifactSpec{Path: a, Required: true, MinBytes: 1, Kind: state.ArtifactFile})
	}
	if o.contract != "" {
		more, err := readContract(o.contract)
		if err != nil {
			return bad("--contract %s: %v", o.contract, err)
		}
		p.specs = append(p.specs, more...)
	}
	for _, s := range p.specs {
		if err := s.Validate(); err != nil {
			return bad("%v", err)
		}
	}
	if len(p.specs) > 0 {
		root := o.artifactsRoot
		if root == "" {
			root = "."
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return bad("--artifacts-root %q: %v", root, err)
		}
		p.root = abs
	} else if o.artifactsRoot != "" {
		return bad("--artifacts-root needs --artifact or --contract")
	}
	hb := o.heartbeatFile
	if hb != "" {
		abs, err := filepath.Abs(hb)
		if err != nil {
			return bad("--heartbeat-file %q: %v", hb, err)
		}
		hb = abs
	}
	p.reg = wire.Register{
		Type: typ, ID: o.id, Label: label,
		Lifecycle:      wire.OptString{Set: true, Value: "running"},
		SupervisorPID:  os.Getpid(),
		HeartbeatFile:  hb,
		TimeoutSeconds: o.timeout.Seconds(),
		ArtifactsRoot:  p.root,
	}
	for _, s := range p.specs {
		req := s.Required
		p.reg.Artifacts = append(p.reg.Artifacts, wire.Artifact{Path: s.Path, Required: &req, MinBytes: s.MinBytes, Kind: s.Kind, NewerThanStart: s.NewerThanStart})
	}
	return p, nil
}

// reusable says whether exec may take over an existing entity in lifecycle
// from: one registered ahead (pending, queued) that can still start
// running. Ended, running or legacy work keeps its id; exec refuses before
// the command starts.
func (p execPlan) reusable(from string) error {
	switch {
	case from == "":
		return withCode(execExitUsage, fmt.Errorf("%s/%s is a legacy entity; exec needs a new --id", p.typ, p.reg.ID))
	case p.graph.IsTerminal(from):
		return withCode(execExitUsage, fmt.Errorf("%s/%s has already ended (%s); exec needs a new --id", p.typ, p.reg.ID, from))
	case from == "running":
		return withCode(execExitUsage, fmt.Errorf("%s/%s is already running; exec needs a new --id", p.typ, p.reg.ID))
	case !p.graph.Allowed(from, "running"):
		return withCode(execExitUsage, fmt.Errorf("%s/%s is %s, which cannot start running; exec needs a new --id", p.typ, p.reg.ID, from))
	}
	return nil
}

// execTypes lists the types exec can wrap.
func execTypes() []string {
	var out []string
	for _, t := range transitions.Types() {
		g, _ := transitions.Lookup(t)
		if g.HasState("running") && transitions.ExitTarget(g, "running", "completed") != "" {
			out = append(out, t)
		}
	}
	return out
}

func runExec(ctx context.Context, o execOptions, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	plan, err := planExec(o, args)
	if err != nil {
		return err
	}
	warn := func(format string, a ...any) { fmt.Fprintf(stderr, "watchdog: exec: "+format+"\n", a...) }
	name := func() string { return plan.typ + "/" + plan.reg.ID }

	// The store first: an --id that is taken by ended or running work is
	// refused before anything runs. An unreachable store is not: the work
	// runs unwatched.
	sink, err := openExecSink(ctx, o)
	var from string // the existing entity's lifecycle, "" for a new one
	if err == nil && plan.reg.ID != "" {
		var found bool
		from, found, err = sink.lookup(ctx, plan.typ, plan.reg.ID)
		if err == nil && found {
			if rerr := plan.reusable(from); rerr != nil {
				sink.close()
				return rerr
			}
		}
	}
	if err != nil {
		if sink != nil {
			sink.close()
		}
		id := plan.reg.ID
		if id == "" {
			id = "(new id)"
		}
		warn("%s/%s is not watched (%v); running the command anyway", plan.typ, id, err)
		sink = nil
	} else {
		defer sink.close()
	}

	// Catch the forwarded signals before the child exists, so none that
	// arrives while it starts is lost (or kills exec instead).
	sigs := make(chan os.Signal, 4)
	// SIGQUIT too: left to the Go runtime it would dump every goroutine of
	// exec and kill it, leaving the child unsupervised; the child is the
	// one asked to quit (and to dump its own core, if it does that).
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	child := exec.Command(args[0], args[1:]...)
	child.Stdin, child.Stdout, child.Stderr = stdin, stdout, stderr
	if err := child.Start(); err != nil {
		code := execExitCannotRun
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = execExitNotFound
		}
		return withCode(code, fmt.Errorf("exec %s: %w", args[0], err))
	}
	// The timeout and the elapsed time count from here, whatever the
	// store costs below.
	started := time.Now()
	pid := child.Process.Pid

	if o.server != "" {
		// The daemon may be on another host: record this one's identity of
		// the child here. Locally the write path fills it in, start ticks
		// included.
		host := localHost()
		plan.reg.HostID = host.HostID()
		plan.reg.BootID, _ = host.BootID()
		if st, _, err := host.StartOf(pid); err == nil {
			plan.reg.PIDStartTime = unixtime.Of(st)
		}
		if st, _, err := host.StartOf(os.Getpid()); err == nil {
			plan.reg.SupervisorStartTime = unixtime.Of(st)
		}
	}
	plan.reg.PID = pid
	if plan.reg.ID == "" {
		plan.reg.ID = fmt.Sprintf("exec-%d-%d", pid, started.Unix())
	}

	if sink != nil {
		if err := sink.register(ctx, plan.reg, from); err != nil {
			warn("%s is not watched (%v); running the command anyway", name(), err)
			sink = nil
		}
	}

	end := superviseChild(child, sigs, started, o.timeout, o.killAfter)
	out := transitions.MapExit(end.code, end.signal, end.timedOut)
	if sink != nil {
		t := plan.outcome(out, end, started)
		if err := sink.finish(ctx, plan.typ, plan.reg.ID, t); err != nil {
			warn("recording the end of %s: %v", name(), err)
		} else if t.Reason != nil && t.Reason.Code == string(state.RunFailedArtifactContract) {
			warn("%s exited 0 but its artifact contract failed: %s", name(), t.Reason.Message)
		}
	}
	if out.ExitCode != 0 {
		return withCode(out.ExitCode, nil)
	}
	return nil
}

// childEnd is how the child ended.
type childEnd struct {
	code     int
	signal   syscall.Signal
	timedOut bool
	elapsed  time.Duration
}

// superviseChild waits for the child, forwarding signals to it and
// enforcing the timeout: SIGTERM at the deadline, SIGKILL killAfter later.
func superviseChild(child *exec.Cmd, sigs <-chan os.Signal, start time.Time, timeout, killAfter time.Duration) childEnd {
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = child.Wait(); close(done) }()

	var deadline, kill <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout - time.Since(start))
		defer t.Stop()
		deadline = t.C
	}
	var end childEnd
	for {
		select {
		case s := <-sigs:
			if (s == syscall.SIGINT || s == syscall.SIGQUIT) && ttyDelivered() {
				continue // the child, in our process group, has it already
			}
			_ = child.Process.Signal(s)
		case <-deadline:
			end.timedOut = true
			_ = child.Process.Signal(syscall.SIGTERM)
			k := time.NewTimer(killAfter)
			defer k.Stop()
			kill = k.C
		case <-kill:
			_ = child.Process.Kill()
		case <-done:
			end.elapsed = time.Since(start)
			end.code = child.ProcessState.ExitCode()
			if ws, ok := child.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				end.signal = ws.Signal()
			}
			_ = waitErr // the exit status above says everything Wait's error does
			return end
		}
	}
}

// outcome is the transition that records the child's end on the plan's
// type: the exit mapping, or failed with run.failed.artifact_contract when
// a successful exit left its contract unmet.
func (p execPlan) outcome(out transitions.ExitOutcome, end childEnd, started time.Time) wire.Transition {
	now := time.Now()
	detail := fmt.Sprintf("exit status %d", end.code)
	if end.signal != 0 {
		detail = "killed by " + signalName(end.signal)
	}
	if end.timedOut {
		detail = fmt.Sprintf("timed out after %s (%s)", end.elapsed.Round(time.Millisecond), detail)
	}
	ev := []state.EvidenceRef{{Kind: state.EvidenceToolResult, ID: fmt.Sprintf("pid %d", p.reg.PID), Detail: detail, FetchedAt: unixtime.Of(now)}}
	to, code, msg := out.To, out.Reason, detail
	if len(p.specs) > 0 {
		// The child has ended and exec holds nothing else: the check's own
		// bounds are the only ones it needs.
		res := probe.CheckArtifacts(context.Background(), p.root, p.specs, started)
		for _, c := range res.Failing() {
			ev = append(ev, c.Evidence(now))
		}
		if res.Stopped != "" {
			ev = append(ev, state.EvidenceRef{Kind: state.EvidenceArtifact, Path: res.Root, Detail: "artifact check stopped: " + res.Stopped, FetchedAt: unixtime.Of(now)})
		}
		if out.To == "completed" && res.Delivery != state.DeliveryPassed {
			to, code = "failed", state.RunFailedArtifactContract
			var probs []string
			for _, c := range res.Failing() {
				probs = append(probs, c.Detail())
			}
			if res.Stopped != "" {
				probs = append(probs, "artifact check stopped: "+res.Stopped)
			}
			msg = fmt.Sprintf("exit status 0 but delivery %s: %s", res.Delivery, strings.Join(probs, "; "))
		}
	}
	if to == "timed_out" && !end.timedOut && p.reg.TimeoutSeconds == 0 {
		// The child claims a timeout of its own (exit 124, as timeout(1)
		// does): timed_out, with the elapsed time; the deadline itself is
		// the child's, unknown here. The types whose timed_out must carry
		// the configured timeout end failed instead.
		if transitions.NeedsTimeout(p.typ) {
			to, code = "failed", state.RunFailedExitNonzero
			msg = detail + fmt.Sprintf(" (the timeout convention, but a %s's timed_out needs the configured timeout: give --timeout)", p.typ)
		} else {
			msg = detail + " (the child's own timeout; exec was given no --timeout)"
		}
	}
	// A contract of many failing artifacts must not make the record of
	// the end too long to be accepted: trim it, saying what was left out.
	fit := state.StateReason{Message: msg, Evidence: ev}
	wire.FitReason(&fit)
	msg, ev = fit.Message, fit.Evidence
	t := wire.Transition{
		To:         transitions.ExitTarget(p.graph, "running", to),
		ExpectFrom: "running",
		Actor:      transitions.ActorExec,
		Reason:     &wire.Reason{Code: string(code), Message: msg, Evidence: ev},
	}
	if to == "timed_out" {
		t.TimeoutSeconds = p.reg.TimeoutSeconds
		t.ElapsedSeconds = end.elapsed.Seconds()
	}
	return t
}

// signalName is a signal as operators write it ("SIGTERM"), not Go's
// description ("terminated").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
