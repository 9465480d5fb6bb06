package state

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// specCodes are the codes the contract has always required at least.
var specCodes = strings.Fields(`run.failed.exit_nonzero run.failed.artifact_contract
run.timed_out.deadline run.aborted.sigint run.cancelled.sigterm run.health.process_dead
run.health.pid_reused run.health.host_rebooted run.health.stalled run.health.idle
run.health.slow run.health.orphaned run.health.stale_lock run.delivery.missing
run.delivery.partial run.delivery.invalid system.health.process_dead_no_terminal
system.reaper.phantom_process_dead system.reaper.phantom_orphaned
show.failed.critical_path_blocked show.blocked.no_ready_plays play.blocked.dependency_failed
play.blocked.dependency_invalid schedule.health.misfired team.health.orphaned
agent.failed.process_crashed`)

func TestSpecCodesRegistered(t *testing.T) {
	for _, c := range specCodes {
		if !Registered(ReasonCode(c)) {
			t.Errorf("required code %s is not registered", c)
		}
		if err := CheckCode(c); err != nil {
			t.Errorf("CheckCode(%s): %v", c, err)
		}
	}
}

// TestEveryEmittedCodeRegistered scans the program's source for string
// literals shaped like a reason code and fails on any unregistered one, so
// a code cannot be emitted without being in the registry.
func TestEveryEmittedCodeRegistered(t *testing.T) {
	root := moduleRoot(t)
	literal := regexp.MustCompile(`^(` + strings.Join(Namespaces, "|") + `)\.[a-z0-9_]+\.[a-z0-9_]+$`)
	scanned, found := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		scanned++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !literal.MatchString(s) {
				return true
			}
			found++
			if !Registered(ReasonCode(s)) {
				t.Errorf("%s: reason code %q is emitted but not registered", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 10 || found < len(specCodes) {
		t.Fatalf("scanned %d files and found %d code literals: the scan is not seeing the source", scanned, found)
	}
}

// TestRegistryInvariants checks what `watchdog reasons` relies on: every
// entry is keyed by its own code and documented by one sentence.
func TestRegistryInvariants(t *testing.T) {
	if len(registry) < len(specCodes) {
		t.Fatalf("%d codes registered, at least %d required", len(registry), len(specCodes))
	}
	for code, info := range registry {
		if info.Code != code {
			t.Errorf("registry[%s] holds %s", code, info.Code)
		}
		if strings.ContainsRune(info.Doc, '\n') || !strings.HasSuffix(info.Doc, ".") {
			t.Errorf("%s: doc %q is not one line ending in a period", code, info.Doc)
		}
	}
}

func TestValidateCode(t *testing.T) {
	tests := []struct {
		code string
		ok   bool
	}{
		{"run.failed.exit_nonzero", true},
		{"knowledge.disputed.user_rejection", true},
		{"system.health.x2", true},
		// Failure cases
		{"", false},
		{"run.failed", false},
		{"run.failed.exit.nonzero", false},
		{"Run.failed.exit", false},
		{"run..exit", false},
		{"run.failed.exit-nonzero", false},
		{"widget.failed.exit", false},
		{" run.failed.exit_nonzero", false},
		{"run.failed.", false},
	}
	for _, tt := range tests {
		err := ValidateCode(tt.code)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateCode(%q) = %v, want ok=%v", tt.code, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrMalformedCode) {
			t.Errorf("ValidateCode(%q): %v is not ErrMalformedCode", tt.code, err)
		}
	}
	if err := CheckCode("run.failed.no_such_cause"); !errors.Is(err, ErrUnknownReason) {
		t.Errorf("unregistered well-formed code: %v", err)
	}
}

func TestRegistrationRefusesBadEntries(t *testing.T) {
	tests := []struct {
		name    string
		entries []ReasonInfo
		want    string
	}{
		{"malformed", []ReasonInfo{{"run.Failed.x", "doc"}}, "malformed reason code"},
		{"bad namespace", []ReasonInfo{{"widget.failed.x", "doc"}}, "is not an entity type"},
		{"duplicate", []ReasonInfo{{"run.failed.x", "doc"}, {"run.failed.x", "again"}}, "registered twice"},
		{"no doc", []ReasonInfo{{"run.failed.x", " "}}, "no doc line"},
	}
	for _, tt := range tests {
		m := map[ReasonCode]ReasonInfo{}
		var err error
		for _, e := range tt.entries {
			if err = addReason(m, e.Code, e.Doc); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want error containing %q", tt.name, err, tt.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("register did not fail loudly on a duplicate")
		}
	}()
	register(string(RunFailedExitNonzero), "again")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}
