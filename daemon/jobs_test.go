package daemon

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"watchdog/config"
	"watchdog/reaper"
)

// TestJobTableCoversEveryJobName: a YAML key cannot name a constant, so
// the config's jobs section is checked against reaper.JobNames here, where the
// config, the vocabulary and the daemon's job table are all in reach.
func TestJobTableCoversEveryJobName(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[config.Jobs]()
	for i := range typ.NumField() {
		keys = append(keys, typ.Field(i).Tag.Get("yaml"))
	}
	if !slices.Equal(keys, reaper.JobNames) {
		t.Errorf("config jobs keys %v, reaper.JobNames %v", keys, reaper.JobNames)
	}
	d := &daemon{cfg: config.Default(), rp: &reaper.Reaper{}}
	var names []string
	for _, j := range d.jobTable() {
		names = append(names, j.Name)
		if j.Spec == "" || j.Run == nil {
			t.Errorf("job %s: spec %q, body set %v", j.Name, j.Spec, j.Run != nil)
		}
	}
	if !slices.Equal(names, reaper.JobNames) {
		t.Errorf("daemon job table %v, reaper.JobNames %v", names, reaper.JobNames)
	}
}

// TestDefaultConfigMapsToDefaultSettings: a command with no config of its
// own (target's Settle) uses reaper.DefaultSettings; they must be what the
// default config maps to, but for the sweep budget, which follows the
// sweep's schedule and which a one-shot run sets for itself.
func TestDefaultConfigMapsToDefaultSettings(t *testing.T) {
	got := ReaperSettings(config.Default())
	if want := specInterval(config.Default().Jobs.Sweep); got.SweepBudget != want || want <= 0 {
		t.Errorf("sweep budget %s, want the sweep's interval %s", got.SweepBudget, want)
	}
	got.SweepBudget = reaper.DefaultSettings.SweepBudget
	if !reflect.DeepEqual(got, reaper.DefaultSettings) {
		t.Errorf("ReaperSettings(config.Default()) = %+v\nreaper.DefaultSettings     = %+v", got, reaper.DefaultSettings)
	}
}

func TestSpecInterval(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want time.Duration
	}{
		{"@every 1m", time.Minute},
		{"@every 15s", 15 * time.Second},
		{"@hourly", time.Hour},
		{"not a spec", 0},
	} {
		if got := specInterval(tc.spec); got != tc.want {
			t.Errorf("specInterval(%q) = %s, want %s", tc.spec, got, tc.want)
		}
	}
}
