package state

import (
	"strconv"

	"watchdog/internal/unixtime"
)

// MaxFactsDescendants bounds one read: a fork bomb must not cost its whole tree.
const MaxFactsDescendants = 256

// ProcessFacts is what an open entity's process is doing, read from /proc at
// read time, never stored (ADR-0048). A pid whose identity is not the
// recorded one is never described (Unavailable says why).
type ProcessFacts struct {
	PID int `json:"pid"`
	// ReadAt is when /proc was read, the moment uptime is counted at.
	ReadAt unixtime.Time `json:"read_at"`
	// Unavailable is why there are no facts; "" when there are.
	Unavailable string `json:"unavailable,omitempty"`
	*ProcessUsage
}

// ProcessUsage is the facts: the root's, and its tree's.
type ProcessUsage struct {
	StartedAt     unixtime.Time `json:"started_at"`
	UptimeSeconds float64       `json:"uptime_seconds"`
	// CPUSeconds is the root's CPU time (user and system, every thread).
	CPUSeconds float64 `json:"cpu_seconds"`
	// RSSBytes is the root's resident set.
	RSSBytes uint64 `json:"rss_bytes"`
	// Threads is the root's thread count.
	Threads int `json:"threads"`
	// Descendants counts the live descendants read; DescendantsMore: some unread.
	Descendants     int  `json:"descendants"`
	DescendantsMore bool `json:"descendants_more,omitempty"`
	// Tasks counts the tree's threads; the Tree sums cover live members only.
	Tasks          int     `json:"tasks"`
	TreeRSSBytes   uint64  `json:"tree_rss_bytes"`
	TreeCPUSeconds float64 `json:"tree_cpu_seconds"`
	// CPUPercent is the tree's use of one core over CPUWindowSeconds.
	CPUPercent       float64 `json:"cpu_percent"`
	CPUWindowSeconds float64 `json:"cpu_window_seconds"`
	// TreeMode is how descendants were found: "events", "walk" or "seed" (ADR-0043).
	TreeMode string `json:"tree_mode"`
}

// DescendantsText is the descendant count, "+" when some were left unread.
func (u *ProcessUsage) DescendantsText() string {
	s := strconv.Itoa(u.Descendants)
	if u.DescendantsMore {
		s += "+"
	}
	return s
}

// TasksText is the tree's task count, "+" when descendants were left unread.
func (u *ProcessUsage) TasksText() string {
	s := strconv.Itoa(u.Tasks)
	if u.DescendantsMore {
		s += "+"
	}
	return s
}

// FormatBytes is a size as the process facts show it ("1.2 MiB").
func FormatBytes(n uint64) string {
	switch {
	case n < 1<<20:
		return strconv.FormatUint((n+512)>>10, 10) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}

// LeftoverFacts are what a leftover finding's processes are doing, read at read time.
type LeftoverFacts struct {
	ReadAt unixtime.Time `json:"read_at"`
	// Running counts those still running as recorded; Processes are their facts.
	Running   int               `json:"running"`
	Processes []LeftoverProcess `json:"processes"`
	// CPUPercent and RSSBytes sum theirs.
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
}

// LeftoverProcess is one named leftover's facts.
type LeftoverProcess struct {
	PID        int     `json:"pid"`
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
}
