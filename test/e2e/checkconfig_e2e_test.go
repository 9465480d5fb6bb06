package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigReportsEverythingServeRefuses: check-config says ok only
// for a file serve starts with, and reports every problem of a bad one in
// one run, each line prefixed with the file: the file's keys and values,
// then what it leads to on this host (a missing token file, a store in a
// directory that does not exist).
func TestCheckConfigReportsEverythingServeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "store:\n  dsn: "+filepath.Join(dir, "w.db")+"\nlisten: 127.0.0.1:0\n")
	if r := svCLI("check-config", good); r.code != 0 || r.stdout != good+": ok\n" {
		t.Errorf("check-config on a good file: %+v", r)
	}
	bad := writeFile(t, dir, "bad.yaml", "store:\n  dsn: "+filepath.Join(dir, "no", "such", "w.db")+"\n"+
		"auth:\n  token_file: "+filepath.Join(dir, "absent.token")+"\n"+
		"thresholds:\n  idel_after: 5m\nlog:\n  level: loud\n")
	r := svCLI("check-config", bad)
	want := []string{
		`line 6: unknown key "thresholds.idel_after"`,
		`log.level: "loud" is not one of`,
		"auth.token_file: token file: open " + filepath.Join(dir, "absent.token"),
		"its directory " + filepath.Join(dir, "no", "such") + " does not exist",
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != len(want) {
		t.Fatalf("check-config on a bad file: exit %d, want 1 and %d lines:\n%s", r.code, len(want), r.stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], bad+": ") || !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q, want %q after the file name", i+1, lines[i], w)
		}
	}
	// serve refuses the same file (at its first problem).
	if r := svCLI("serve", "--config", writeFile(t, dir, "dir.yaml", "store:\n  dsn: "+filepath.Join(dir, "no", "w.db")+"\nlisten: 127.0.0.1:0\n")); r.code == 0 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("serve with a store in a missing directory: %+v", r)
	}
}
