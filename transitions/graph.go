// Package transitions holds one lifecycle graph per entity type and the one
// write path through which every lifecycle value is set: registration and
// validated, compare-and-set transitions with an audit row.
package transitions

import (
	"fmt"
	"sort"
	"strings"
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
	// process of its own.
	DeadProcessTerminal string
	// AdminTargets, when set, is the only set of states an admin actor may
	// move an entity to (ADR-0025 for sessions).
	AdminTargets []string
}

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
