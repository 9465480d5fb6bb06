// Package jobs is the vocabulary of the daemon's scheduled jobs (docs/reference/state-model.md, Scheduled jobs):
// their names, which are the keys of the config's jobs section, the label
// values of the job metrics and a reaper report's Job, and the results of
// one run. It has one owner so that the daemon's job table, the metrics'
// label sets and the reaper's reports cannot spell a job two ways; the
// config's YAML keys, which cannot name a constant, are held to Names by a
// test in daemon.
package jobs

// Job names, in the order of the jobs table in docs/reference/state-model.md.
const (
	Sweep           = "sweep"
	EnforceTerminal = "enforce_terminal"
	ReapPhantoms    = "reap_phantoms"
	CheckSchedules  = "check_schedules"
	Vacuum          = "vacuum"
)

// Names lists every job, in the order of that table.
var Names = []string{Sweep, EnforceTerminal, ReapPhantoms, CheckSchedules, Vacuum}

// Job results, the closed label vocabulary of watchdog_job_runs_total.
const (
	ResultOK      = "ok"
	ResultError   = "error"
	ResultSkipped = "skipped"
	ResultTimeout = "timeout"
)

// Results lists every job result.
var Results = []string{ResultOK, ResultError, ResultSkipped, ResultTimeout}
