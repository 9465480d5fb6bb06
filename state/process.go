package state

import (
	"strconv"

	"watchdog/internal/unixtime"
)

// MaxFactsDescendants is how many of a root's descendants one read of its
// process facts reads (ADR-0048): a fork bomb under an entity must not make
// an entity read cost its whole tree. Beyond it the counts say "256+".
const MaxFactsDescendants = 256

// ProcessFacts is what an open entity's process is doing, as read from
// /proc at the moment of the read (ADR-0048): what `systemctl status` and
// `monit status` show per process. It is the entity read's `process`
// object, found at read time on the process's own host (wire.Processes)
// and never stored; an entity that is not open, of another host or with
// no pid has none.
//
// When the facts cannot be read, Unavailable says why ("no such process",
// "pid reused", "permission denied", "start time not recorded", ...) and
// Usage is nil: a pid whose identity is not the recorded one is never
// described, so the facts of a newcomer that reused it are never shown.
type ProcessFacts struct {
	PID int `json:"pid"`
	// ReadAt is when /proc was read: the moment uptime_seconds is counted
	// at.
	ReadAt unixtime.Time `json:"read_at"`
	// Unavailable is why there are no facts; "" when there are.
	Unavailable string `json:"unavailable,omitempty"`
	*ProcessUsage
}

// ProcessUsage is the facts themselves: the root process's, and its
// tree's (the root and its live descendants, at most MaxFactsDescendants
// of them read).
type ProcessUsage struct {
	StartedAt     unixtime.Time `json:"started_at"`
	UptimeSeconds float64       `json:"uptime_seconds"`
	// CPUSeconds is the root's CPU time (user and system, every thread).
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the root's resident set.
	RSSBytes uint64 `json:"rss_bytes"`
	// Threads is the root's thread count.
	Threads int `json:"threads"`
	// Descendants counts the root's live descendants read; DescendantsMore
	// says the tree held more than MaxFactsDescendants, left unread.
	Descendants     int  `json:"descendants"`
	DescendantsMore bool `json:"descendants_more,omitempty"`
	// Tasks counts the tree's threads (systemd's "Tasks"); TreeRSSBytes
	// and TreeCPUSeconds sum the tree's resident sets and CPU times (the
	// live members only: a descendant that ended took its CPU time along).
	Tasks          int     `json:"tasks"`
	TreeRSSBytes   uint64  `json:"tree_rss_bytes"`
	TreeCPUSeconds float64 `json:"tree_cpu_seconds"`
	// CPUPercent is the tree's CPU use over the last CPUWindowSeconds, in
	// percent of one core (200 is two cores busy, as top shows it): since
	// the same reader's previous read of this tree when there was one at
	// least a second before, else since the root started (its lifetime
	// average, as ps shows it).
	CPUPercent       float64 `json:"cpu_percent"`
	CPUWindowSeconds float64 `json:"cpu_window_seconds"`
	// TreeMode is how the descendants were found: "events" or "walk" (the
	// daemon's kept tree, ADR-0043), or "seed" (read from the root down at
	// this read: a CLI's, or a root the daemon does not keep).
	TreeMode string `json:"tree_mode"`
}

// DescendantsText is the descendant count as a table shows it: "3", or
// "256+" when more were left unread.
func (u *ProcessUsage) DescendantsText() string {
	s := strconv.Itoa(u.Descendants)
	if u.DescendantsMore {
		s += "+"
	}
	return s
}

// TasksText is the tree's task count as a table shows it, "+" when
// descendants were left unread.
func (u *ProcessUsage) TasksText() string {
	s := strconv.Itoa(u.Tasks)
	if u.DescendantsMore {
		s += "+"
	}
	return s
}

// FormatBytes is a size as the process facts show it: "812 KiB",
// "1.2 MiB", "3.4 GiB".
func FormatBytes(n uint64) string {
	switch {
	case n < 1<<20:
		return strconv.FormatUint((n+512)>>10, 10) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}

// LeftoverFacts are what the processes an entity's leftover finding names
// (run.health.leftover_processes) are doing, read from /proc at the read
// on their host, as ProcessFacts are for an open entity's own process: a
// leftover python3 at 49% of a core is seen, not only counted.
type LeftoverFacts struct {
	ReadAt unixtime.Time `json:"read_at"`
	// Running counts the named processes still running with the identity
	// the finding recorded; Processes are their facts, by pid.
	Running   int               `json:"running"`
	Processes []LeftoverProcess `json:"processes"`
	// CPUPercent and RSSBytes sum theirs (CPUPercent in percent of one
	// core, as ProcessUsage's).
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
}

// LeftoverProcess is one named leftover's facts.
type LeftoverProcess struct {
	PID        int     `json:"pid"`
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
}
