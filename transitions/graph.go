// Package transitions holds one lifecycle graph per entity type and the one
// write path through which every lifecycle value is set: registration and
// validated, compare-and-set transitions with an audit row.
package transitions

import (
	"fmt"
	"sort"
	"strings"

	"watchdog/state"
	"watchdog/store"
)

// Graph is one entity type's lifecycle state machine.
type Graph struct {
	// Type is the entity type name.
	Type string
	// States lists every lifecycle value, in reading order.
	States []string
	// Initial is the lifecycle of a newly registered entity.
	Initial string
	// Terminal lists the states that end the entity. A terminal state has
	// no outgoing edge unless Edges lists one (agent restarts, show archive).
	Terminal []string
	// Outcomes lists the non-terminal states that are nonetheless outcomes
	// (a show that completed, merged or failed but is not yet archived).
	Outcomes []string
	// Edges maps a state to the states it may move to.
	Edges map[string][]string
	// DeadProcessTerminal is where the reaper moves a non-terminal entity
	// whose process died without recording an end; "" when the type has no
	// process of its own. DeadTarget adapts it to the entity's lifecycle.
	DeadProcessTerminal string
	// OnInterrupt and OnTerminate are where a user's interruption (SIGINT,
	// exit 130) and a termination (SIGTERM, exit 143) end the running work:
	// the type's own word for a stop someone intended (cancelled,
	// interrupted, stopped), never a failure, so that a Ctrl-C reads alike
	// across types. "" for a type with no process of its own.
	OnInterrupt string
	OnTerminate string
	// AdminTargets, when set, is the only set of states an admin actor may
	// move an entity to (the Session Status Vocabulary design, for sessions).
	AdminTargets []string
	// WorkingStates are the states in which the entity is expected to
	// show signs of life, so that a stale heartbeat means it stalled
	// (issue 14): a waiting state (an agent idle or suspended) or an
	// ended one is not judged by heartbeat age. Types without any (show,
	// team, schedule) are never judged stale.
	WorkingStates []string
	// Start is the state whose entry starts the work and stamps
	// started_at; "" when the type has no running phase (see Started).
	Start string
	// NeedsTrigger says every transition must name its trigger.
	NeedsTrigger bool
	// NeedsTimeout says a timed_out must carry the configured timeout
	// (docs/reference/state-model.md, Lifecycle graphs). The other types record it when it is known: one that hit
	// a deadline the watchdog was not told about (a child's own exit 124)
	// still timed out, with its elapsed time as the evidence.
	NeedsTimeout bool
	// FullCompletion reserves completed for a contract that passes: with
	// a Contracts judge, the write path refuses completed unless the
	// contract, judged at that moment, passes.
	FullCompletion bool
	// Guard, when set, refuses a move that the entity's own evidence
	// forbids although the edge exists; the write path reports its error
	// as ErrInvalidTransition.
	Guard func(to string, cur store.Entity) error
	// Reconcile, when set, is how the reaper settles an open entity of
	// this type by what other entities say, in place of judging a
	// process of its own.
	Reconcile *Reconciliation
	// ByCron says the type is judged by its cron spec (when it is due,
	// when it misfired), not by a probe of its heartbeat: a schedule.
	ByCron bool
	// Hostless says an entity of the type may belong to no host: the work
	// it records lives in the store, not in a process (see HostBound).
	Hostless bool
}

// Reconciliation is a reap_phantoms rule for a type judged by its
// relatives: the rule's name (one of the Reconcile* constants, which the
// reaper maps to its check), the state it moves the entity to, and every
// reason code it may record.
type Reconciliation struct {
	Rule  string
	To    string
	Codes []state.ReasonCode
	// ParentTypes, for ReconcileParentEnded, are the parent types whose
	// end settles the entity.
	ParentTypes []string
}

// The reconciliation rules the reaper knows.
const (
	// ReconcileParentEnded: the entity's parent show or play has ended.
	ReconcileParentEnded = "parent_ended"
	// ReconcileDependency: a play named in depends_on failed or does not
	// exist.
	ReconcileDependency = "dependency"
	// ReconcileCriticalPath: a critical-path play of the entity failed.
	ReconcileCriticalPath = "critical_path"
)

// Started reports whether an entity registered in lifecycle s has already
// started: it is past its initial state, or in the start state itself
// (a turn is registered running).
func (g *Graph) Started(s string) bool {
	return s != g.Initial || (g.Start != "" && s == g.Start)
}

// Starts reports whether a move to s starts the work.
func (g *Graph) Starts(s string) bool { return g.Start != "" && s == g.Start }

// nearest lists, for a terminal another rule asks for, the terminals that
// stand in for it, in order, where a type lacks it or the edge to it.
var nearest = map[string][]string{
	"completed": {"completed", "succeeded", "stopped"},
	"aborted":   {"aborted", "interrupted", "cancelled", "failed"},
	"cancelled": {"cancelled", "interrupted", "failed"},
	"timed_out": {"timed_out", "failed"},
	"failed":    {"failed", "aborted", "interrupted", "cancelled"},
}

// Nearest adapts a terminal named in the session vocabulary (want) to this
// type, for an entity currently in from: want itself when the type has the
// edge, else the nearest terminal it can reach (invocations succeed rather
// than complete; a held workflow is not timed out but failed; an invocation
// still pending reaches only cancelled or skipped). It returns "" when no
// terminal fits, and the caller then leaves the lifecycle alone rather
// than have a refused write retried.
func (g *Graph) Nearest(from, want string) string {
	if g.IsTerminal(want) && g.Allowed(from, want) {
		// The type's own word (a turn's interrupted) needs no stand-in.
		return want
	}
	for _, c := range nearest[want] {
		if g.IsTerminal(c) && g.Allowed(from, c) {
			return c
		}
	}
	return ""
}

// DeadTarget is the terminal a dead process ends an entity in lifecycle
// from in: DeadProcessTerminal, or the nearest one reachable. "" when the
// type has no process of its own or no terminal is reachable.
func (g *Graph) DeadTarget(from string) string {
	if g.DeadProcessTerminal == "" {
		return ""
	}
	return g.Nearest(from, g.DeadProcessTerminal)
}

// Working reports whether an entity in lifecycle s is working, and so
// judged by its heartbeat's age (see WorkingStates).
func (g *Graph) Working(s string) bool { return contains(g.WorkingStates, s) }

// HasState reports whether s is one of the graph's lifecycle values.
func (g *Graph) HasState(s string) bool { return contains(g.States, s) }

// IsTerminal reports whether s ends the entity.
func (g *Graph) IsTerminal(s string) bool { return contains(g.Terminal, s) }

// Allowed reports whether the edge from -> to is in the graph.
func (g *Graph) Allowed(from, to string) bool { return contains(g.Edges[from], to) }

// Outcome is the outcome an entity in lifecycle s carries: the terminal
// value itself, a listed outcome state, or "" while the work is open.
func (g *Graph) Outcome(s string) string {
	if g.IsTerminal(s) || contains(g.Outcomes, s) {
		return s
	}
	return ""
}

// Targets lists the states reachable from s in one step.
func (g *Graph) Targets(s string) []string { return append([]string(nil), g.Edges[s]...) }

// Text renders the graph for a person: one line per state with its edges.
func (g *Graph) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: initial %s; terminal %s\n", g.Type, g.Initial, orNone(g.Terminal))
	for _, s := range g.States {
		mark := "  "
		if g.IsTerminal(s) {
			mark = "* "
		}
		to := g.Edges[s]
		if len(to) == 0 {
			fmt.Fprintf(&b, "%s%-14s (no outgoing edge)\n", mark, s)
			continue
		}
		fmt.Fprintf(&b, "%s%-14s -> %s\n", mark, s, strings.Join(to, ", "))
	}
	return b.String()
}

// DOT renders the graph in Graphviz DOT: the initial state is bold,
// terminal states are double circles.
func (g *Graph) DOT() string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %q {\n  rankdir=LR;\n  node [shape=circle];\n", g.Type)
	for _, s := range g.States {
		attrs := []string{}
		if g.IsTerminal(s) {
			attrs = append(attrs, "shape=doublecircle")
		}
		if s == g.Initial {
			attrs = append(attrs, "style=bold")
		}
		fmt.Fprintf(&b, "  %q", s)
		if len(attrs) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(attrs, ", "))
		}
		b.WriteString(";\n")
	}
	for _, s := range g.States {
		for _, t := range g.Edges[s] {
			fmt.Fprintf(&b, "  %q -> %q;\n", s, t)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// graphs is every entity type, in one explicit map (no init-time
// self-registration): a reader finds every kind here.
var graphs = map[string]*Graph{
	"session":    &sessionGraph,
	"show":       &showGraph,
	"play":       &playGraph,
	"invocation": &invocationGraph,
	"schedule":   &scheduleGraph,
	"team":       &teamGraph,
	"agent":      &agentGraph,
	"subagent":   &subagentGraph,
	"workflow":   &workflowGraph,
	"turn":       &turnGraph,
}

// ByCron says whether entities of type typ are judged by their cron spec
// (Graph.ByCron); false for an unknown type.
func ByCron(typ string) bool {
	g, ok := graphs[typ]
	return ok && g.ByCron
}

// aliases maps alternative type names to their canonical type.
var aliases = map[string]string{"run": "session"}

// CanonicalType resolves aliases ("run" -> "session") and reports whether
// the type is known.
func CanonicalType(t string) (string, bool) {
	if a, ok := aliases[t]; ok {
		t = a
	}
	_, ok := graphs[t]
	return t, ok
}

// Lookup returns the graph of an entity type (aliases allowed).
func Lookup(t string) (*Graph, error) {
	c, ok := CanonicalType(t)
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownType, t, strings.Join(Types(), ", "))
	}
	return graphs[c], nil
}

// Types lists the canonical entity types, sorted.
func Types() []string {
	out := make([]string, 0, len(graphs))
	for t := range graphs {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
