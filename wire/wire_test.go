package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"watchdog/state"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		empty bool
		want  error
		msg   string
	}{
		{"ok", `{"type":"session","id":"s1"}`, false, nil, ""},
		{"empty allowed", "  \n", true, nil, ""},
		// Failure cases
		{"empty", "", false, ErrBadInput, "empty document"},
		{"unknown field", `{"type":"session","id":"s1","colour":"red"}`, false, ErrBadInput, `unknown field "colour"`},
		{"trailing data", `{"type":"session","id":"s1"} {}`, false, ErrBadInput, "trailing data"},
		{"syntax", "{\n\"type\": }", false, ErrBadInput, "malformed JSON at line 2"},
		{"truncated", `{"type":"session"`, false, ErrBadInput, "unexpected end"},
		{"wrong type", `{"type":"session","id":"s1","pid":"abc"}`, false, ErrBadInput, `field "pid": want a number, got string`},
		{"number too large", `{"type":"session","id":"s1","pid":1e30}`, false, ErrOutOfRange, `pid: 1e30 is out of range: want a pid from 1 to 4194304`},
		{"fraction for a whole number", `{"type":"session","id":"s1","pid":1.5}`, false, ErrBadInput, `field "pid": 1.5 is out of range`},
		{"not an object", `[1,2]`, false, ErrBadInput, "want a JSON object"},
		{"too large", `{"label":"` + strings.Repeat("x", MaxBody) + `"}`, false, ErrTooLarge, "over 1048576 bytes"},
	}
	for _, tt := range tests {
		var r Register
		err := Decode(strings.NewReader(tt.body), &r, tt.empty)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: got %v, want %v containing %q", tt.name, err, tt.want, tt.msg)
		}
	}
}

func TestRegisterLifecyclePresence(t *testing.T) {
	tests := []struct {
		body      string
		legacy    bool
		lifecycle string // "" = none given
	}{
		{`{"type":"session","id":"a"}`, false, ""},
		{`{"type":"session","id":"a","lifecycle":null}`, true, ""},
		{`{"type":"session","id":"a","lifecycle":"running"}`, false, "running"},
	}
	for _, tt := range tests {
		var r Register
		if err := Decode(strings.NewReader(tt.body), &r, false); err != nil {
			t.Fatal(err)
		}
		reg, err := r.Registration("orchestrator")
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if reg.Entity.Lifecycle != nil {
			got = *reg.Entity.Lifecycle
		}
		if reg.Legacy != tt.legacy || got != tt.lifecycle {
			t.Errorf("%s: legacy=%v lifecycle=%q", tt.body, reg.Legacy, got)
		}
	}
}

func TestRegisterConversion(t *testing.T) {
	body := `{"type":"play","id":"p1","artifacts_root":"/r","artifacts":[{"path":"a.md"},{"path":"b.json","required":false,"kind":"json"}],
		"parent":{"type":"show","id":"sh1"},"depends_on":["p0"],"schedule":{"cron":"*/5 * * * *","last_fired_at":1716517000.5},"metadata":{"k":1}}`
	var r Register
	if err := Decode(strings.NewReader(body), &r, false); err != nil {
		t.Fatal(err)
	}
	reg, err := r.Registration("orchestrator")
	if err != nil {
		t.Fatal(err)
	}
	e := reg.Entity
	if !e.Artifacts[0].Required || e.Artifacts[1].Required || e.Artifacts[1].Kind != "json" {
		t.Errorf("artifacts %+v: required must default to true", e.Artifacts)
	}
	if e.ParentType != "show" || e.ParentID != "sh1" || e.DependsOn[0] != "p0" || e.ScheduleCron != "*/5 * * * *" || !e.ScheduleLastFiredAt.Equal(unixAt(1716517000.5)) {
		t.Errorf("entity %+v", e)
	}
	for _, bad := range []string{
		`{"id":"x"}`,
		`{"type":"session"}`,
		`{"type":"session","id":"x","metadata":[1]}`,
		`{"type":"session","id":"x","parent":{"type":"show"}}`,
	} {
		var r Register
		if err := Decode(strings.NewReader(bad), &r, false); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Registration("orchestrator"); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestRegisterListPresence: an absent list stays nil (a re-registration
// keeps the stored one), an explicit [] is empty but present (it clears).
func TestRegisterListPresence(t *testing.T) {
	for _, c := range []struct {
		body    string
		present bool
	}{
		{`{"type":"play","id":"p1"}`, false},
		{`{"type":"play","id":"p1","artifacts":[],"depends_on":[],"lock_files":[]}`, true},
	} {
		var r Register
		if err := Decode(strings.NewReader(c.body), &r, false); err != nil {
			t.Fatal(err)
		}
		reg, err := r.Registration("orchestrator")
		if err != nil {
			t.Fatal(err)
		}
		e := reg.Entity
		for name, isNil := range map[string]bool{"artifacts": e.Artifacts == nil, "depends_on": e.DependsOn == nil, "lock_files": e.LockFiles == nil} {
			if isNil == c.present {
				t.Errorf("%s: %s nil=%v", c.body, name, isNil)
			}
		}
	}
}

func TestTransitionRequest(t *testing.T) {
	var tr Transition
	if err := Decode(strings.NewReader(`{"to":"aborted","reason":{"code":"run.aborted.sigint","evidence":[{"kind":"tool_result","detail":"x"}]},"expect_from":"running"}`), &tr, false); err != nil {
		t.Fatal(err)
	}
	req, err := tr.Request("session", "s1", "orchestrator")
	if err != nil || req.Actor != "orchestrator" || req.Reason.Code != "run.aborted.sigint" || req.ExpectFrom != "running" || len(req.Reason.Evidence) != 1 {
		t.Errorf("request %+v %v", req, err)
	}
	if _, err := (Transition{}).Request("session", "s1", "orchestrator"); !errors.Is(err, ErrBadInput) {
		t.Errorf("missing to: %v", err)
	}
}

// TestFitReason: whatever exec builds for a child's end (here 100 failing
// artifacts with long paths, and a long message) fits the limits that
// CheckReason enforces, and says how much evidence it left out.
func TestFitReason(t *testing.T) {
	long := strings.Repeat("é", 3000) // multi-byte: the cut must stay valid UTF-8
	for _, n := range []int{0, 5, 31, 32, 33, 100} {
		r := &state.StateReason{Code: state.RunFailedArtifactContract, Message: long}
		for i := range n {
			r.Evidence = append(r.Evidence, state.EvidenceRef{Kind: state.EvidenceArtifact, Path: fmt.Sprintf("/srv/%d/%s", i, long[:1500]), Detail: long})
		}
		FitReason(r)
		if err := CheckReason(r); err != nil {
			t.Fatalf("%d artifacts: after FitReason, CheckReason says %v", n, err)
		}
		if !utf8.ValidString(r.Message) {
			t.Fatalf("%d artifacts: the cut message is not valid UTF-8", n)
		}
		if n > 0 {
			last := r.Evidence[len(r.Evidence)-1]
			kept := len(r.Evidence)
			if strings.HasPrefix(last.Detail, "and ") {
				kept--
				if want := fmt.Sprintf("and %d more, not listed", n-kept); last.Detail != want {
					t.Errorf("%d artifacts: summary %q, want %q", n, last.Detail, want)
				}
			} else if kept != n {
				t.Errorf("%d artifacts: kept %d with no summary of the rest", n, kept)
			}
		}
	}
}
