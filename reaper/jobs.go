package reaper

// The vocabulary of the daemon's scheduled jobs (docs/reference/state-model.md,
// Scheduled jobs): their names, which are the keys of the config's jobs
// section, the label values of the job metrics and a report's Job, and the
// results of one run. It has one owner so that the daemon's job table, the
// metrics' label sets and the reports cannot spell a job two ways; the
// config's YAML keys, which cannot name a constant, are held to JobNames by
// a test in daemon. It lives here because every job but vacuum is one of
// this package's.

// Job names, in the order of the jobs table in docs/reference/state-model.md.
const (
	JobSweep           = "sweep"
	JobEnforceTerminal = "enforce_terminal"
	JobReapPhantoms    = "reap_phantoms"
	JobCheckSchedules  = "check_schedules"
	JobVacuum          = "vacuum"
)

// JobNames lists every job, in the order of that table.
var JobNames = []string{JobSweep, JobEnforceTerminal, JobReapPhantoms, JobCheckSchedules, JobVacuum}

// Job results, the closed label vocabulary of watchdog_job_runs_total.
const (
	ResultOK      = "ok"
	ResultError   = "error"
	ResultSkipped = "skipped"
	ResultTimeout = "timeout"
)

// JobResults lists every job result.
var JobResults = []string{ResultOK, ResultError, ResultSkipped, ResultTimeout}
