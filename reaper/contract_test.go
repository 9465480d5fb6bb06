package reaper

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/state"
	"watchdog/store"
)

type hostName string

func (h hostName) HostID() string { return string(h) }

// TestContractsJudgeRealFiles: the write path's judge is the probe's
// artifact check on this host's files, with the sweep's findings.
func TestContractsJudgeRealFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "ok.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := func(p string) []state.ArtifactSpec { return []state.ArtifactSpec{{Path: p, Required: true}} }
	tests := []struct {
		name     string
		e        store.Entity
		ok       bool
		delivery state.Delivery
		finding  state.ReasonCode
	}{
		{"missing", store.Entity{HostID: "here", ArtifactsRoot: root, Artifacts: spec("a.txt")}, true, state.DeliveryMissing, state.RunDeliveryMissing},
		{"passed", store.Entity{HostID: "here", ArtifactsRoot: root, Artifacts: spec("ok.txt")}, true, state.DeliveryPassed, ""},
		{"another host's files", store.Entity{HostID: "there", ArtifactsRoot: root, Artifacts: spec("a.txt")}, false, "", ""},
		{"no contract", store.Entity{HostID: "here"}, false, "", ""},
	}
	for _, tt := range tests {
		tt.e.Type, tt.e.ID = "workflow", "w"
		v, ok := Contracts{Host: hostName("here")}.Judge(context.Background(), tt.e, time.Now())
		if ok != tt.ok || v.Delivery != tt.delivery {
			t.Errorf("%s: %v %s, want %v %s", tt.name, ok, v.Delivery, tt.ok, tt.delivery)
		}
		if tt.finding != "" {
			if len(v.Reasons) != 1 || v.Reasons[0].Code != tt.finding || v.Reasons[0].EntityID != "w" {
				t.Errorf("%s: reasons %+v, want %s for w", tt.name, v.Reasons, tt.finding)
			}
			if len(v.Failing) != 1 || !strings.Contains(v.Failing[0], "a.txt") {
				t.Errorf("%s: failing %v does not name a.txt", tt.name, v.Failing)
			}
		}
	}
}
