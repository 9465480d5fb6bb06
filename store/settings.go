package store

import "time"

// DaemonSettings are the settings a host's daemon judges with, as it
// recorded them at its start or its last reload: a command on the same
// database uses them rather than whatever config it finds itself.
type DaemonSettings struct {
	// YAML is the daemon's thresholds section ("thresholds:\n  idle_after:
	// 10m\n…"), every key written, as config.Parse reads it back.
	YAML string
	// Source is the config file they came from, "" for the defaults.
	Source string
	// At is when they were recorded.
	At time.Time
}
