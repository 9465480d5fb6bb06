package transitions

import (
	"sort"
	"strings"
	"testing"

	"watchdog/state"
)

// specTable is docs/reference/state-model.md's graph table, copied as text without its initial column: "type | edges | terminal".
// Issue 14 (observation 11) adds running→cancelled to the workflow row.
// The test parses it independently of the Go graphs and checks every pair
// of states of every type against it.
const specTable = `
session | pending→running; pending→failed/cancelled/aborted; running→completed/failed/timed_out/cancelled/aborted | completed failed timed_out cancelled aborted
show | draft→planned/archived; planned→active/archived; active→completed/merged/failed/archived; completed/merged/failed→archived | archived
play | planned→queued/blocked/skipped/cancelled; queued→running/blocked/skipped/cancelled; running→run_complete/failed/timed_out/cancelled/blocked; run_complete→merged/failed; blocked→queued/failed/skipped/cancelled | merged failed timed_out cancelled skipped
invocation | pending→running/skipped/cancelled; running→succeeded/failed/timed_out/cancelled | succeeded failed timed_out cancelled skipped
schedule | enabled→paused/disabled; paused→enabled/disabled; disabled→enabled |
team | active→idle/blocked/closed; idle→active/blocked/closed; blocked→active/closed | closed
agent | pending→starting/failed; starting→idle/failed; idle→busy/suspended/stopped/failed; busy→idle/suspended/stopped/failed; suspended→idle/busy/stopped/failed; stopped→starting; failed→starting | stopped failed
subagent | queued→running/cancelled; running→completed/failed/timed_out/interrupted/cancelled/detached; detached→completed/failed/timed_out/cancelled | completed failed timed_out interrupted cancelled
workflow | running→completed/partial/failed/timed_out/cancelled/held; held→running/failed/cancelled | completed partial failed timed_out cancelled
turn | running→completed/partial_failed/failed/interrupted/timed_out | completed partial_failed failed interrupted timed_out
`

type specGraph struct {
	edges    map[[2]string]bool
	terminal map[string]bool
	states   map[string]bool
}

func parseSpec(t *testing.T) map[string]specGraph {
	t.Helper()
	out := map[string]specGraph{}
	for _, line := range strings.Split(strings.TrimSpace(specTable), "\n") {
		cols := strings.Split(line, "|")
		if len(cols) != 3 {
			t.Fatalf("bad spec line %q", line)
		}
		typ := strings.TrimSpace(cols[0])
		g := specGraph{edges: map[[2]string]bool{}, terminal: map[string]bool{}, states: map[string]bool{}}
		for _, rule := range strings.Split(cols[1], ";") {
			from, to, ok := strings.Cut(strings.TrimSpace(rule), "→")
			if !ok {
				t.Fatalf("bad rule %q", rule)
			}
			for _, f := range strings.Split(from, "/") {
				for _, x := range strings.Split(to, "/") {
					g.edges[[2]string{f, x}] = true
					g.states[f], g.states[x] = true, true
				}
			}
		}
		for _, s := range strings.Fields(cols[2]) {
			g.terminal[s] = true
		}
		out[typ] = g
	}
	return out
}

func TestGraphsMatchSpecExhaustively(t *testing.T) {
	spec := parseSpec(t)
	if len(spec) != len(graphs) {
		t.Fatalf("spec has %d types, code has %d", len(spec), len(graphs))
	}
	pairs := 0
	for typ, sg := range spec {
		g, err := Lookup(typ)
		if err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		// Same states: every state the spec mentions exists, and the code
		// has no state the spec never mentions.
		for s := range sg.states {
			if !g.HasState(s) {
				t.Errorf("%s: spec state %q missing from graph", typ, s)
			}
		}
		for _, s := range g.States {
			if !sg.states[s] {
				t.Errorf("%s: graph state %q not in the spec", typ, s)
			}
		}
		for _, from := range g.States {
			for _, to := range g.States {
				pairs++
				want := sg.edges[[2]string{from, to}]
				if got := g.Allowed(from, to); got != want {
					t.Errorf("%s: %s -> %s allowed=%v, spec says %v", typ, from, to, got, want)
				}
			}
			if got, want := g.IsTerminal(from), sg.terminal[from]; got != want {
				t.Errorf("%s: %s terminal=%v, spec says %v", typ, from, got, want)
			}
		}
		if !g.HasState(g.Initial) {
			t.Errorf("%s: initial %q is not a state", typ, g.Initial)
		}
		if g.DeadProcessTerminal != "" && !g.IsTerminal(g.DeadProcessTerminal) {
			t.Errorf("%s: dead-process terminal %q is not terminal", typ, g.DeadProcessTerminal)
		}
	}
	if pairs < 300 {
		t.Fatalf("only %d state pairs checked", pairs)
	}
}

func TestTerminalStatesClosed(t *testing.T) {
	// Only the edges the graph table lists leave a terminal state.
	allowedOut := map[string]map[string]bool{
		"agent": {"stopped": true, "failed": true}, // restart
	}
	for _, typ := range Types() {
		g := graphs[typ]
		for _, s := range g.Terminal {
			if len(g.Edges[s]) > 0 && !allowedOut[typ][s] {
				t.Errorf("%s: terminal %s has outgoing edges %v", typ, s, g.Edges[s])
			}
		}
	}
}

func TestDeadProcessTargets(t *testing.T) {
	want := map[string]string{"session": "aborted", "invocation": "failed", "subagent": "failed", "turn": "failed", "workflow": "failed", "agent": "failed"}
	for _, typ := range Types() {
		if got := graphs[typ].DeadProcessTerminal; got != want[typ] {
			t.Errorf("%s: dead-process terminal %q, want %q", typ, got, want[typ])
		}
	}
}

func TestTypesAreReasonNamespaces(t *testing.T) {
	ns := map[string]bool{}
	for _, n := range state.Namespaces {
		ns[n] = true
	}
	for _, typ := range append(Types(), "run") {
		if !ns[typ] {
			t.Errorf("entity type %s is not a reason-code namespace", typ)
		}
	}
}

func TestAliasAndUnknownType(t *testing.T) {
	if g, err := Lookup("run"); err != nil || g.Type != "session" {
		t.Fatalf("run alias: %v %v", g, err)
	}
	if _, err := Lookup("widget"); err == nil || !strings.Contains(err.Error(), "known: agent") {
		t.Fatalf("unknown type error %v should list known types", err)
	}
}

func TestAgentLegacyMappings(t *testing.T) {
	tests := []struct{ lifecycle, status, activity string }{
		{"pending", "pending", "idle"},
		{"starting", "pending", "idle"},
		{"idle", "running", "idle"},
		{"busy", "running", "busy"},
		{"suspended", "running", "idle"},
		{"stopped", "stopped", "idle"},
		{"failed", "failed", "idle"},
	}
	covered := []string{}
	for _, tt := range tests {
		if got := ToAgentStatus(tt.lifecycle); got != tt.status {
			t.Errorf("ToAgentStatus(%s) = %s, want %s", tt.lifecycle, got, tt.status)
		}
		if got := ToActivityState(tt.lifecycle); got != tt.activity {
			t.Errorf("ToActivityState(%s) = %s, want %s", tt.lifecycle, got, tt.activity)
		}
		covered = append(covered, tt.lifecycle)
	}
	states := append([]string(nil), agentGraph.States...)
	sort.Strings(states)
	sort.Strings(covered)
	if strings.Join(states, ",") != strings.Join(covered, ",") {
		t.Errorf("mapping table covers %v, agent states are %v", covered, states)
	}
	for _, tr := range []string{"spawn", "reconciliation", ""} {
		if !ValidTrigger(tr) {
			t.Errorf("trigger %q refused", tr)
		}
	}
	if ValidTrigger("sneezed") {
		t.Error("unknown trigger accepted")
	}
}

func TestDOT(t *testing.T) {
	dot := graphs["agent"].DOT()
	for _, want := range []string{`digraph "agent"`, `"stopped" -> "starting"`, `"failed" [shape=doublecircle]`, `"pending" [style=bold]`} {
		if !strings.Contains(dot, want) {
			t.Errorf("DOT lacks %s:\n%s", want, dot)
		}
	}
}

// TestEveryReasonRequiredTargetHasAFittingCode: wherever a graph has a
// state whose transitions need a reason, the registry holds a code that
// fits it (the type's own, run or system, with that state as dimension),
// so no orchestrator has to borrow a code that says something else.
func TestEveryReasonRequiredTargetHasAFittingCode(t *testing.T) {
	for typ, g := range graphs {
		for _, to := range reasonRequiredTargets {
			if !g.HasState(to) {
				continue
			}
			fits := false
			for _, r := range state.Reasons() {
				parts := strings.Split(string(r.Code), ".")
				if parts[1] == to && state.ForeignTo(r.Code, typ) == "" {
					fits = true
					break
				}
			}
			if !fits {
				t.Errorf("%s has %s, which needs a reason, and no registered %s.%s.*, run.%s.* or system.%s.* code fits it", typ, to, typ, to, to, to)
			}
		}
	}
}

// TestGraphRules pins each type's own rules, which the write path and the
// reaper read from its graph.
func TestGraphRules(t *testing.T) {
	needsTimeout := map[string]bool{"subagent": true, "workflow": true, "turn": true}
	for _, typ := range Types() {
		g := graphs[typ]
		if want := g.HasState("running"); (g.Start == "running") != want || (g.Start != "" && g.Start != "running") {
			t.Errorf("%s: start state %q", typ, g.Start)
		}
		if g.NeedsTimeout != needsTimeout[typ] {
			t.Errorf("%s: NeedsTimeout %v", typ, g.NeedsTimeout)
		}
		if g.NeedsTrigger != (typ == "agent") {
			t.Errorf("%s: NeedsTrigger %v", typ, g.NeedsTrigger)
		}
		if (g.Guard != nil) != (typ == "workflow") {
			t.Errorf("%s: guard set %v", typ, g.Guard != nil)
		}
		if g.Reconcile != nil && g.DeadProcessTerminal != "" {
			t.Errorf("%s: both a process and a reconciliation rule", typ)
		}
	}
}
