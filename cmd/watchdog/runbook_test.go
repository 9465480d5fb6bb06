package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRunbookCommandsAreReal: every `watchdog …` command a "What to do"
// line of docs/runbook.md names (the page, /runbook and the pushed
// alerts show those lines) is a command of this binary with flags it
// takes (issue 39: the page said `wd transition`, an alias of the
// runbook's introduction only).
func TestRunbookCommandsAreReal(t *testing.T) {
	doc, err := os.ReadFile("../../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile("`((?:watchdog|wd) [^`]+)`")
	n := 0
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "**Do.**") {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			n++
			fields := strings.Fields(m[1])
			if fields[0] != "watchdog" {
				t.Errorf("a What to do names %q: %s is not a command (write watchdog)", m[1], fields[0])
				continue
			}
			root := newRootCmd()
			cmd, rest, err := root.Find(fields[1:])
			if err != nil || cmd == root {
				t.Errorf("a What to do names %q: no such command (%v)", m[1], err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("a What to do names %q: %v", m[1], err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no watchdog command found in any What to do line: the test reads nothing")
	}
}
