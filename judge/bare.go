package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
)

// Bare probes and judges a bare process now, as a running entity with no record
// (`watchdog probe --pid`). Artifacts are judged once the process is gone
// or ended is set.
func Bare(ctx context.Context, h *probe.Host, t probe.Subject, th Thresholds, ended bool, now time.Time) probe.Verdict {
	if t.StartTime.IsZero() {
		if id, err := h.Identify(t.PID); err == nil {
			t.StartedAt = id.StartTime
		}
	}
	look := func() Result { return Classify(h.Probe(ctx, t, now), th, now) }
	r := look()
	notDue := false
	if !ended && len(t.Artifacts) > 0 && r.Liveness == probe.Alive &&
		(r.Delivery == state.DeliveryMissing || r.Delivery == state.DeliveryPartial) && !anyInvalid(r.Artifacts) {
		t.SkipArtifacts, notDue = true, true
		if r = look(); r.Liveness != probe.Alive {
			// It ended between the two looks: its artifacts are due.
			t.SkipArtifacts, notDue = false, false
			r = look()
		}
	}
	ns := state.Normalize("running", "", r.Health, r.Delivery, r.Reasons, now)
	subject := state.ContractSubject(t.Artifacts)
	display := state.DisplayChain(ns, subject, true) // a process is what it judged
	if notDue {
		what := subject
		if what == "" {
			what = "Artifacts"
		}
		display += state.Separator + what + " not due yet"
	}
	return probe.Verdict{
		State:     ns,
		Undecided: r.Liveness == probe.Unknown,
		Display:   display,
		Reasons:   r.Reasons,
		Evidence:  r.Evidence(),
	}
}

// anyInvalid says whether a file of the contract is there and fails its
// check: said even while the run goes on.
func anyInvalid(a probe.ArtifactResult) bool {
	for _, c := range a.Checks {
		if c.Status == probe.ArtifactInvalid {
			return true
		}
	}
	return false
}

// AdHoc names a bare process as `watchdog probe --pid` is given it: each
// value as typed, "" when not given.
type AdHoc struct {
	PID, StartTime, Heartbeat string
	IdleAfter, StalledAfter   string
}

// Subject checks each value and returns what the probe needs; an error names
// the flag and says what it wants.
func (a AdHoc) Subject() (probe.Subject, Thresholds, error) {
	var t probe.Subject
	th := DefaultThresholds
	if a.PID == "" {
		return t, th, errors.New("--pid is required (or --entity TYPE/ID)")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(a.PID))
	if err != nil || pid <= 0 {
		return t, th, fmt.Errorf("--pid %q is not a process id (a positive integer)", a.PID)
	}
	t.PID = pid
	if a.StartTime != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(a.StartTime), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return t, th, fmt.Errorf("--start-time %q is not a time in Unix seconds (e.g. 1716517000.12)", a.StartTime)
		}
		t.StartTime = unixtime.FromSeconds(v)
	}
	if a.Heartbeat == "" {
		t.NoHeartbeat = true
	} else {
		t.HeartbeatFile = a.Heartbeat
	}
	for _, d := range []struct {
		flag, value string
		into        *time.Duration
	}{
		{"--idle-after", a.IdleAfter, &th.IdleAfter},
		{"--stalled-after", a.StalledAfter, &th.StalledAfter},
	} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(strings.TrimSpace(d.value))
		if err != nil || v <= 0 {
			return t, th, fmt.Errorf("%s %q is not a positive duration (try 10m)", d.flag, d.value)
		}
		*d.into = v
	}
	if th.IdleAfter >= th.StalledAfter {
		return t, th, fmt.Errorf("--idle-after %v must be shorter than --stalled-after %v", th.IdleAfter, th.StalledAfter)
	}
	return t, th, nil
}
