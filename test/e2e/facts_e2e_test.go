package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/wire"
)

// factsRow is the cells of id's row in `status --wide` with args, by
// column name.
func factsRow(t *testing.T, id string, args ...string) (map[string]string, string) {
	t.Helper()
	r := wd(t, "", append([]string{"status", "--wide"}, args...)...)
	if r.code != 0 {
		t.Fatalf("status --wide %v: exit %d: %s", args, r.code, r.stderr)
	}
	lines := strings.Split(r.stdout, "\n")
	split := regexp.MustCompile(`\s{2,}`)
	head := split.Split(strings.TrimSpace(lines[0]), -1)
	for _, l := range lines[1:] {
		cells := split.Split(strings.TrimSpace(l), -1)
		if len(cells) == len(head) && cells[2] == id {
			row := map[string]string{}
			for i, h := range head {
				row[h] = cells[i]
			}
			return row, r.stdout
		}
	}
	return nil, r.stdout
}

// factsListed is id's entity in `status --json` with args.
func factsListed(t *testing.T, id string, args ...string) wire.Entity {
	t.Helper()
	r := wd(t, "", append([]string{"status", "--json"}, args...)...)
	var l wire.EntityList
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &l) != nil {
		t.Fatalf("status --json %v: exit %d: %s%s", args, r.code, r.stderr, r.stdout)
	}
	for _, e := range l.Items {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("status --json %v lists no %s", args, id)
	return wire.Entity{}
}

// TestStatusWideProcessFacts: `status --wide` and `status --json` show an
// open entity's process facts (ADR-0048), from a database (read here)
// and through a daemon (read by it), alike: a shell with one child is
// two tasks, one descendant; an ended entity has none.
func TestStatusWideProcessFacts(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "watchdog.db")
	d := svStart(t, svWriteConfig(t, dir, svConfig{}, db), db)

	sh := exec.Command("sh", "-c", "sleep 300 & wait")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) // the shell's group: its sleep too
		_ = sh.Wait()
	})
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"facts","lifecycle":"running","pid":%d}`, sh.Process.Pid))
	done := svSleep(t)
	svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"ended","lifecycle":"running","pid":%d}`, done.pid))
	if r := wd(t, "", "transition", "--db", db, "session/ended", "aborted", "--reason", "run.aborted.operator"); r.code != 0 {
		t.Fatalf("end: exit %d: %s", r.code, r.stderr)
	}

	for _, src := range [][]string{{"--db", db}, {"--server", d.base}} {
		t.Run(src[0], func(t *testing.T) {
			var row map[string]string
			testenv.Eventually(t, "the shell's row with its child", ceiling, func() (bool, string) {
				var out string
				row, out = factsRow(t, "facts", src...)
				return row != nil && row["DESC"] == "1" && row["TASKS"] == "2", out
			})
			if !regexp.MustCompile(`^\d+\.\d$`).MatchString(row["CPU%"]) || !strings.HasSuffix(row["RSS"], "iB") ||
				!regexp.MustCompile(`^\d+[smhd]$`).MatchString(row["UPTIME"]) || row["PID"] != fmt.Sprint(sh.Process.Pid) {
				t.Errorf("the shell's row: %v", row)
			}
			ended, out := factsRow(t, "ended", src...)
			if ended == nil || ended["CPU%"] != "-" || ended["TASKS"] != "-" {
				t.Errorf("the ended entity's row: %v\n%s", ended, out)
			}

			e := factsListed(t, "facts", src...)
			p := e.Process
			if p == nil || p.ProcessUsage == nil || p.PID != sh.Process.Pid || p.Descendants != 1 || p.Tasks != 2 || p.TreeRSSBytes <= p.RSSBytes {
				t.Fatalf("status --json: process %+v", p)
			}
			if want := map[string]string{"--db": "seed", "--server": ""}[src[0]]; want != "" && p.TreeMode != want {
				t.Errorf("tree mode %q, want %q", p.TreeMode, want)
			} else if src[0] == "--server" && p.TreeMode != "events" && p.TreeMode != "walk" {
				t.Errorf("the daemon's tree mode %q, want its kept tree's", p.TreeMode)
			}
			if p := factsListed(t, "ended", src...).Process; p != nil {
				t.Errorf("status --json: the ended entity has %+v", p)
			}
		})
	}
}
