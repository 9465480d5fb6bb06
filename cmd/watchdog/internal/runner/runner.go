// Package runner is `watchdog exec` without the flags: it plans the
// registration before anything starts, supervises the child, and records
// how it ended through a Sink (ADR-0047).
package runner

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

	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

// Exit codes of the runner's own failures, as GNU timeout and env use
// them, so a wrapper's failure never passes for the child's exit code.
const (
	ExitUsage     = 125 // the runner itself failed: bad options, bad contract
	ExitCannotRun = 126 // the command exists but cannot be run
	ExitNotFound  = 127 // the command does not exist
)

// DefaultKillAfter is the wait between the timeout's SIGTERM and SIGKILL.
const DefaultKillAfter = 10 * time.Second

// ExitError is an end the runner's process should exit with: Code, and
// Err's message if any (the child's own non-zero exit has none).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the code to exit with.
func (e *ExitError) ExitCode() int { return e.Code }

func usage(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// Options are what to run and how to watch it.
type Options struct {
	Type, ID, Label string
	// Timeout stops the command after this long (0: never); KillAfter then SIGKILLs.
	Timeout, KillAfter time.Duration
	HeartbeatFile      string
	ArtifactsRoot      string
	Artifacts          []string
	Contract           string
	// KillLeftovers ends what the child left running before its end is recorded.
	KillLeftovers bool
	// KeepStderr and KeepStdout keep the stream's last TailBytes (not a terminal's).
	KeepStderr, KeepStdout bool
}

// plan is what the runner will register and how it will judge the end,
// decided before the command starts, so bad input changes nothing.
type plan struct {
	typ   string
	graph *transitions.Graph
	reg   wire.Register
	specs []state.ArtifactSpec
	root  string
}

func newPlan(o Options, args []string) (plan, error) {
	typ, ok := transitions.CanonicalType(o.Type)
	if !ok {
		return plan{}, usage("unknown entity type %q (known: %s)", o.Type, strings.Join(transitions.Types(), ", "))
	}
	g, _ := transitions.Lookup(typ)
	if !canWrap(g) {
		return plan{}, usage("--type %s has no running state to wrap a command in (use one of: %s)", typ, strings.Join(Types(), ", "))
	}
	if o.ID != "" {
		if err := transitions.ValidateID(o.ID); err != nil {
			return plan{}, usage("--id: %v", err)
		}
	}
	if o.Timeout < 0 || o.KillAfter < 0 {
		return plan{}, usage("--timeout and --kill-after must not be negative")
	}
	label := o.Label
	if label == "" {
		label = strings.Join(args, " ")
		if len(label) > 200 {
			label = label[:200]
		}
	}
	p := plan{typ: typ, graph: g}
	var err error
	if p.specs, p.root, err = wire.ContractFromFlags(o.Artifacts, o.Contract, o.ArtifactsRoot); err != nil {
		return plan{}, usage("%v", err)
	}
	hb := o.HeartbeatFile
	if hb != "" {
		abs, err := filepath.Abs(hb)
		if err != nil {
			return plan{}, usage("--heartbeat-file %q: %v", hb, err)
		}
		hb = abs
	}
	p.reg = wire.Register{
		Type: typ, ID: o.ID, Label: label,
		Lifecycle:      wire.OptString{Set: true, Value: "running"},
		SupervisorPID:  os.Getpid(),
		HeartbeatFile:  hb,
		TimeoutSeconds: o.Timeout.Seconds(),
		ArtifactsRoot:  p.root,
	}
	for _, s := range p.specs {
		req := s.Required
		p.reg.Artifacts = append(p.reg.Artifacts, wire.Artifact{Path: s.Path, Required: &req, MinBytes: s.MinBytes, Kind: s.Kind, NewerThanStart: s.NewerThanStart})
	}
	return p, nil
}

// reusable says whether the runner may take over an existing entity in
// lifecycle from: one registered ahead that can still start running.
func (p plan) reusable(from string) error {
	switch {
	case from == "":
		return usage("%s/%s is a legacy entity; exec needs a new --id", p.typ, p.reg.ID)
	case p.graph.IsTerminal(from):
		return usage("%s/%s has already ended (%s); exec needs a new --id", p.typ, p.reg.ID, from)
	case from == "running":
		return usage("%s/%s is already running; exec needs a new --id", p.typ, p.reg.ID)
	case !p.graph.Allowed(from, "running"):
		return usage("%s/%s is %s, which cannot start running; exec needs a new --id", p.typ, p.reg.ID, from)
	}
	return nil
}

// canWrap says whether g has a running state and a successful end.
func canWrap(g *transitions.Graph) bool {
	return g.HasState("running") && g.Nearest("running", "completed") != ""
}

// Types lists the types the runner can wrap.
func Types() []string {
	var out []string
	for _, t := range transitions.Types() {
		if g, _ := transitions.Lookup(t); canWrap(g) {
			out = append(out, t)
		}
	}
	return out
}

// Stdio are the child's standard streams; Stderr gets the runner's warnings too.
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Run plans the run, opens the sink, runs args[0] with args[1:], and
// records its end. A failing sink does not stop the command: it runs
// unwatched, said on Stderr. The error is an *ExitError for every end but
// a zero exit (124 on timeout, 128+N for signal N).
func Run(ctx context.Context, o Options, args []string, open func(context.Context) (Sink, error), stdio Stdio) error {
	if len(args) == 0 {
		return usage("no command to run")
	}
	p, err := newPlan(o, args)
	if err != nil {
		return err
	}
	warn := func(format string, a ...any) { fmt.Fprintf(stdio.Stderr, "watchdog: exec: "+format+"\n", a...) }
	name := func() string { return p.typ + "/" + p.reg.ID }

	// A taken --id is refused before anything runs; an unreachable store is
	// not: the work runs unwatched.
	sink, err := open(ctx)
	var from string // the existing entity's lifecycle, "" for a new one
	if err == nil && p.reg.ID != "" {
		var found bool
		from, found, err = lookup(ctx, sink, p.typ, p.reg.ID)
		if err == nil && found {
			if rerr := p.reusable(from); rerr != nil {
				sink.Close()
				return rerr
			}
		}
	}
	if err != nil {
		if sink != nil {
			sink.Close()
		}
		id := p.reg.ID
		if id == "" {
			id = "(new id)"
		}
		warn("%s/%s is not watched (%v); running the command anyway", p.typ, id, err)
		sink = nil
	} else {
		defer sink.Close()
	}

	// Catch the forwarded signals before the child exists, so none is lost.
	sigs := make(chan os.Signal, 4)
	// SIGQUIT too: the Go runtime's default would kill the runner and leave
	// the child unsupervised.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	// Subreaper: the child's orphans come to the runner, found at its end and
	// reaped on SIGCHLD (not Linux: they go to init).
	_ = becomeSubreaper()
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)

	child := exec.Command(args[0], args[1:]...)
	child.Stdin = stdio.Stdin
	var caps []*capture
	var end childEnd
	child.Stdout, end.stdout, err = stream(stdio.Stdout, o.KeepStdout, &caps)
	if err == nil {
		child.Stderr, end.stderr, err = stream(stdio.Stderr, o.KeepStderr, &caps)
	}
	if err != nil {
		closeCaptures(caps)
		return &ExitError{Code: ExitCannotRun, Err: err}
	}
	if len(caps) > 0 {
		// A closed pipe on our side must fail the write, not kill the runner with
		// SIGPIPE and leave the child unsupervised.
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
	}
	if err := child.Start(); err != nil {
		closeCaptures(caps)
		code := ExitCannotRun
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = ExitNotFound
		}
		return &ExitError{Code: code, Err: fmt.Errorf("exec %s: %w", args[0], err)}
	}
	for _, c := range caps {
		c.start()
	}
	// The timeout counts from here, whatever the store costs below.
	started := time.Now()
	p.reg.PID = child.Process.Pid
	if p.reg.ID == "" {
		p.reg.ID = fmt.Sprintf("exec-%d-%d", p.reg.PID, started.Unix())
	}
	if sink != nil {
		if err := register(ctx, sink, p.reg, from); err != nil {
			warn("%s is not watched (%v); running the command anyway", name(), err)
			sink = nil
		}
	}

	ended := supervise(child, sigs, chld, started, o.Timeout, o.KillAfter)
	ended.stdout, ended.stderr = end.stdout, end.stderr
	end = ended
	// Leftovers are ended (or not) before the end is recorded.
	end.killLeftovers = o.KillLeftovers
	if procs := listLeftovers(); len(procs) > 0 {
		if o.KillLeftovers {
			end.leftovers = endLeftovers(procs, o.KillAfter)
		} else {
			for _, p := range procs {
				end.leftovers = append(end.leftovers, leftover{proc: p})
			}
		}
	}
	reapOrphans()
	// Told on the terminal too, not only in the store.
	if clause, _ := leftoverFates(end.leftovers, end.killLeftovers, time.Now()); clause != "" {
		warn("%s left processes behind: %s", name(), clause)
	}
	// All output is in the pipes now; stop them (a leftover may hold them open).
	for _, c := range caps {
		c.finish()
	}
	out := p.graph.MapExit(end.code, end.signal, end.timedOut, p.reg.TimeoutSeconds > 0)
	if sink != nil {
		t := p.outcome(out, end, started)
		if err := finish(ctx, sink, p.typ, p.reg.ID, t); err != nil {
			warn("recording the end of %s: %v", name(), err)
		} else if t.Reason != nil && t.Reason.Code == string(state.RunFailedArtifactContract) {
			warn("%s exited 0 but its artifact contract failed: %s", name(), t.Reason.Message)
		}
	}
	if out.ExitCode != 0 {
		return &ExitError{Code: out.ExitCode}
	}
	return nil
}

// stream is what the child gets for one output stream: dst itself (a file
// with nothing kept, or a terminal), else a capture's pipe.
func stream(dst io.Writer, keep bool, caps *[]*capture) (io.Writer, *tail, error) {
	if dst == nil {
		return nil, nil, nil // os/exec gives the child the null device
	}
	if f, ok := dst.(*os.File); ok && (!keep || keepsTerminal(f)) {
		return f, nil, nil
	}
	var t *tail
	if keep {
		t = newTail(TailBytes)
	}
	c, err := newCapture(dst, t)
	if err != nil {
		return nil, nil, err
	}
	*caps = append(*caps, c)
	return c.w, t, nil
}

func closeCaptures(caps []*capture) {
	for _, c := range caps {
		_ = c.r.Close()
		_ = c.w.Close()
	}
}
