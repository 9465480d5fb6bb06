package reaper

import (
	"reflect"
	"slices"
	"testing"

	"watchdog/config"
)

// TestConfigJobKeysAreJobNames: a YAML key cannot name a constant, so the
// config's jobs section is checked against JobNames here, where both are
// in reach (config may not import reaper).
func TestConfigJobKeysAreJobNames(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[config.Jobs]()
	for i := range typ.NumField() {
		keys = append(keys, typ.Field(i).Tag.Get("yaml"))
	}
	if !slices.Equal(keys, JobNames) {
		t.Errorf("config jobs keys %v, JobNames %v", keys, JobNames)
	}
}
