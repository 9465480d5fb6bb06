// Package transitions holds one lifecycle graph per entity type and the one
// write path that sets every lifecycle: validated compare-and-set transitions
// with an audit row.
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
	// Terminal lists the states that end the entity (Edges may restart one).
	Terminal []string
	// Outcomes lists the non-terminal states that are nonetheless outcomes.
	Outcomes []string
	// Edges maps a state to the states it may move to.
	Edges map[string][]string
	// DeadProcessTerminal is where the reaper ends an entity whose process died.
	DeadProcessTerminal string
	// OnInterrupt and OnTerminate are the type's words for an intended stop.
	OnInterrupt string
	OnTerminate string
	// AdminTargets, when set, are the only states an admin may move to.
	AdminTargets []string
	// WorkingStates are where a stale heartbeat means stalled (ADR-0024).
	WorkingStates []string
	// Start is the state whose entry stamps started_at; "" for none.
	Start string
	// NeedsTrigger says every transition must name its trigger.
	NeedsTrigger bool
	// NeedsTimeout says a timed_out must carry the configured timeout.
	NeedsTimeout bool
	// FullCompletion refuses completed unless the contract passes at that moment.
	FullCompletion bool
	// Guard, when set, refuses a move the entity's own evidence forbids.
	Guard func(to string, cur store.Entity) error
	// Reconcile, when set, settles an open entity by what its relatives say.
	Reconcile *Reconciliation
	// ByCron says the type is judged by its cron spec, not a heartbeat probe.
	ByCron bool
	// Hostless says an entity of the type may belong to no host (HostBound).
	Hostless bool
}

// Reconciliation is a reap_phantoms rule for a type judged by its
// relatives: the rule, the target state and every code it may record.
type Reconciliation struct {
	Rule  string
	To    string
	Codes []state.ReasonCode
	// ParentTypes, for ReconcileParentEnded, are the parents whose end settles it.
	ParentTypes []string
}

// The reconciliation rules the reaper knows.
const (
	// ReconcileParentEnded: the entity's parent show or play has ended.
	ReconcileParentEnded = "parent_ended"
	// ReconcileDependency: a play named in depends_on failed or does not exist.
	ReconcileDependency = "dependency"
	// ReconcileCriticalPath: a critical-path play of the entity failed.
	ReconcileCriticalPath = "critical_path"
)

// Started reports whether an entity registered in lifecycle s has already
// started (a turn is registered running).
func (g *Graph) Started(s string) bool {
	return s != g.Initial || (g.Start != "" && s == g.Start)
}

// Starts reports whether a move to s starts the work.
func (g *Graph) Starts(s string) bool { return g.Start != "" && s == g.Start }

// nearest lists the terminals that stand in, in order, for a wanted one.
var nearest = map[string][]string{
	"completed": {"completed", "succeeded", "stopped"},
	"aborted":   {"aborted", "interrupted", "cancelled", "failed"},
	"cancelled": {"cancelled", "interrupted", "failed"},
	"timed_out": {"timed_out", "failed"},
	"failed":    {"failed", "aborted", "interrupted", "cancelled"},
}

// Nearest adapts a terminal of the session vocabulary (want) to this type
// for an entity in from: want, else the nearest reachable terminal, else ""
// (the caller then leaves the lifecycle alone rather than retry a refusal).
func (g *Graph) Nearest(from, want string) string {
	if g.IsTerminal(want) && g.Allowed(from, want) {
		return want
	}
	for _, c := range nearest[want] {
		if g.IsTerminal(c) && g.Allowed(from, c) {
			return c
		}
	}
	return ""
}

// DeadTarget is the terminal a dead process ends an entity in from in.
func (g *Graph) DeadTarget(from string) string {
	if g.DeadProcessTerminal == "" {
		return ""
	}
	return g.Nearest(from, g.DeadProcessTerminal)
}

// Working reports whether an entity in s is judged by heartbeat age.
func (g *Graph) Working(s string) bool { return contains(g.WorkingStates, s) }

// HasState reports whether s is one of the graph's lifecycle values.
func (g *Graph) HasState(s string) bool { return contains(g.States, s) }

// IsTerminal reports whether s ends the entity.
func (g *Graph) IsTerminal(s string) bool { return contains(g.Terminal, s) }

// Allowed reports whether the edge from -> to is in the graph.
func (g *Graph) Allowed(from, to string) bool { return contains(g.Edges[from], to) }

// Outcome is the outcome an entity in s carries; "" while the work is open.
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

// DOT renders the graph in Graphviz DOT.
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

// graphs is every entity type in one explicit map, no init-time registration.
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

// ByCron says whether entities of type typ are judged by their cron spec.
func ByCron(typ string) bool {
	g, ok := graphs[typ]
	return ok && g.ByCron
}

// aliases maps alternative type names to their canonical type.
var aliases = map[string]string{"run": "session"}

// CanonicalType resolves aliases and reports whether the type is known.
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
