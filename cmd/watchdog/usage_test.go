package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestUsageErrorsSayWhatToDo: a mistyped command names the one it is
// close to, and a wrong number of arguments names the command's usage, in
// the one line a usage error gets (exit 2).
func TestUsageErrorsSayWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"stauts"}, []string{`unknown command "stauts"`, "did you mean status?", "(see watchdog --help)"}},
		{[]string{"attetnion"}, []string{"did you mean attention?"}},
		{[]string{"graph"}, []string{"graph: accepts 1 arg(s), received 0", "usage: watchdog graph TYPE", "(see watchdog graph --help)"}},
		{[]string{"nonsense-xyz"}, []string{`unknown command "nonsense-xyz"`, "(see watchdog --help)"}},
		// Bulk triage: fingerprints or a cluster, one of them, well formed,
		// refused before any store is opened.
		{[]string{"snooze"}, []string{"give the fingerprints", "or --cluster KEY"}},
		{[]string{"dismiss", "--cluster", "run.health.stalled", "session:s-1:run.health.stalled"}, []string{"fingerprints or --cluster, not both"}},
		{[]string{"snooze", "--cluster", "cluster_run.health.nope"}, []string{"--cluster:", "names no reason code"}},
		{[]string{"dismiss", "session:s-1:run.health.stalled", "s-2"}, []string{`"s-2" is not <entity_type>:<entity_id>:<reason_code>`}},
		{[]string{"snooze", "--for", "0", "--cluster", "run.health.stalled"}, []string{"--for"}},
	} {
		var out, errOut bytes.Buffer
		code := run(tc.args, &out, &errOut)
		lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
		if code != 2 || len(lines) != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", tc.args, code, errOut.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%v: %q lacks %q", tc.args, lines[0], w)
			}
		}
	}
}
