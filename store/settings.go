package store

import "time"

// DaemonSettings are the settings a host's daemon recorded at start or reload,
// used by commands on the same database.
type DaemonSettings struct {
	// YAML is the daemon's thresholds section, every key written.
	YAML string
	// Source is the config file they came from, "" for the defaults.
	Source string
	// At is when they were recorded.
	At time.Time
}
