package config

import (
	"reflect"
	"testing"
	"time"
)

// A recorded thresholds section reads back as written, and the diff names
// each key that differs.
func TestThresholdsRecorded(t *testing.T) {
	th := DefaultThresholds
	th.IdleAfter = Duration(5 * time.Minute)
	th.RequireHeartbeat = []string{"session"}
	doc, err := th.ThresholdsYAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseThresholds(doc)
	if err != nil || !reflect.DeepEqual(back, th) {
		t.Fatalf("read back %+v %v from\n%s; want %+v", back, err, doc, th)
	}
	if got := ThresholdsDiff(th, DefaultThresholds); !reflect.DeepEqual(got, []string{"idle_after 5m≠10m", "require_heartbeat [session]≠[]"}) {
		t.Errorf("diff %q", got)
	}
	if got := ThresholdsDiff(th, th); got != nil {
		t.Errorf("diff of equal thresholds %q", got)
	}
	if _, err := ParseThresholds("thresholds:\n  idle_after: 2h\n"); err == nil {
		t.Error("a recorded section whose idle_after exceeds stalled_after was taken")
	}
}
