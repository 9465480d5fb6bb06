package reaper

// The jobs' vocabulary has one owner so the job table, metric labels and
// reports cannot spell a job two ways (docs/reference/state-model.md).

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
