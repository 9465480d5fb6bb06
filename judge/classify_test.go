package judge

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/internal/unixtime"
	"watchdog/probe"
	"watchdog/state"
)

var classifyNow = time.Unix(1716520000, 0)

func pidObs(l probe.Liveness, c probe.PIDCause) probe.PIDObservation {
	o := probe.PIDObservation{Subject: probe.PIDSubject{PID: 4242, StartTime: unixtime.FromSeconds(1716517000)}, Liveness: l, Cause: c}
	if l == probe.Alive {
		o.State, o.StartTime, o.PPID = 'S', unixtime.FromSeconds(1716517000), 1
	}
	if c == probe.CauseOtherHost {
		o.Subject.HostID, o.HostID = "host-b", "host-a"
	}
	return o
}

func hbObs(src probe.HeartbeatSource, age time.Duration) probe.HeartbeatObservation {
	at := classifyNow.Add(-age)
	return probe.HeartbeatObservation{Source: src, Claimed: at, At: at, Age: age}
}

func artifacts(d state.Delivery, checks ...probe.ArtifactCheck) probe.ArtifactResult {
	return probe.ArtifactResult{Delivery: d, Checks: checks}
}

func check(path string, required bool, s probe.ArtifactStatus, problem string) probe.ArtifactCheck {
	return probe.ArtifactCheck{Spec: state.ArtifactSpec{Path: path, Required: required}, Status: s, Rel: path, Root: "/runs", Problem: problem}
}

func TestClassify(t *testing.T) {
	var (
		alive      = pidObs(probe.Alive, probe.CauseNone)
		unverified = pidObs(probe.Alive, probe.CauseIdentityUnset)
		gone       = pidObs(probe.Dead, probe.CauseNoSuchProcess)
		zombie     = pidObs(probe.Dead, probe.CauseZombie)
		vanished   = pidObs(probe.Dead, probe.CauseVanished)
		reused     = pidObs(probe.Dead, probe.CausePIDReused)
		rebooted   = pidObs(probe.Dead, probe.CauseHostRebooted)
		denied     = pidObs(probe.Unknown, probe.CausePermission)
		noPID      = probe.PIDObservation{Cause: probe.CauseNoPID}
		remote     = pidObs(probe.Unknown, probe.CauseOtherHost)

		fresh      = hbObs(probe.HeartbeatFile, time.Minute)
		idle       = hbObs(probe.HeartbeatFile, 15*time.Minute)
		stalled    = hbObs(probe.HeartbeatPosted, 2*time.Hour)
		youngStart = hbObs(probe.HeartbeatFromStart, time.Minute)
		oldStart   = hbObs(probe.HeartbeatFromStart, 2*time.Hour)
		skewed     = probe.HeartbeatObservation{Source: probe.HeartbeatFile, Claimed: classifyNow.Add(time.Hour), At: classifyNow, Skew: time.Hour}

		started90m = classifyNow.Add(-90 * time.Minute)
		started4h  = classifyNow.Add(-4 * time.Hour)
		passed     = artifacts(state.DeliveryPassed, check("review.md", true, probe.ArtifactValid, ""))
	)
	var (
		dead        = state.RunHealthProcessDead
		pidReused   = state.RunHealthPIDReused
		hostReboot  = state.RunHealthHostRebooted
		orphaned    = state.RunHealthOrphaned
		stalledCode = state.RunHealthStalled
		idleCode    = state.RunHealthIdle
		slow        = state.RunHealthSlow
		skew        = state.RunHealthClockSkew
		unknown     = state.RunHealthLivenessUnknown
		disconn     = state.RunHealthDisconnected
		staleLock   = state.RunHealthStaleLock
	)

	for _, tc := range []struct {
		name     string
		obs      probe.Observations
		th       Thresholds
		health   state.Health
		delivery state.Delivery
		codes    []state.ReasonCode
	}{
		// probe.Liveness first: a conclusive death wins over everything.
		{"dead: no such pid", probe.Observations{PID: gone, Heartbeat: fresh}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: zombie", probe.Observations{PID: zombie}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: vanished", probe.Observations{PID: vanished}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: pid reused", probe.Observations{PID: reused}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{pidReused}},
		{"dead: host rebooted", probe.Observations{PID: rebooted}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{hostReboot}},
		{"dead beats stalled", probe.Observations{PID: gone, Heartbeat: stalled}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead beats orphaned", probe.Observations{PID: gone, Supervisor: gone, ParentTerminal: true}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},

		// Alive: orphans, then heartbeat staleness.
		{"orphaned: supervisor dead", probe.Observations{PID: alive, Supervisor: gone, Heartbeat: fresh}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"orphaned: parent ended", probe.Observations{PID: alive, ParentTerminal: true, Heartbeat: stalled}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"supervisor unknown is not orphaned", probe.Observations{PID: alive, Supervisor: denied, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, stalled", probe.Observations{PID: alive, Heartbeat: stalled}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},
		{"alive, never sent one, old", probe.Observations{PID: alive, Heartbeat: oldStart}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},
		{"alive, idle", probe.Observations{PID: alive, Heartbeat: idle}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"alive, fresh", probe.Observations{PID: alive, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, identity unverified", probe.Observations{PID: unverified, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, heartbeat age unknown", probe.Observations{PID: alive}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, slow", probe.Observations{PID: alive, Heartbeat: fresh, StartedAt: started90m}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{slow}},
		{"alive, past slow_until", probe.Observations{PID: alive, Heartbeat: fresh, StartedAt: started4h}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, idle is not slow", probe.Observations{PID: alive, Heartbeat: idle, StartedAt: started90m}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"alive, heartbeat from the future", probe.Observations{PID: alive, Heartbeat: skewed}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{skew}},
		{"custom idle_after", probe.Observations{PID: alive, Heartbeat: hbObs(probe.HeartbeatFile, 2*time.Minute)}, Thresholds{IdleAfter: time.Minute}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"custom stalled_after", probe.Observations{PID: alive, Heartbeat: idle}, Thresholds{IdleAfter: time.Minute, StalledAfter: 5 * time.Minute}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},

		// probe.Unknown liveness: never process_dead.
		{"unknown, nothing else", probe.Observations{PID: denied, Heartbeat: youngStart}, Thresholds{}, state.HealthUnknown, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"unknown, fresh heartbeat", probe.Observations{PID: denied, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"unknown, idle", probe.Observations{PID: denied, Heartbeat: idle}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{unknown, idleCode}},
		{"unknown, stalled", probe.Observations{PID: denied, Heartbeat: stalled}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{unknown, stalledCode}},
		{"no pid yet", probe.Observations{PID: noPID}, Thresholds{}, state.HealthUnknown, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"no pid yet, never sent a heartbeat, old", probe.Observations{PID: noPID, Heartbeat: oldStart}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{unknown, stalledCode}},

		// Another host: disconnected unless a fresh heartbeat.
		{"other host, fresh heartbeat", probe.Observations{PID: remote, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"other host, fresh, slow", probe.Observations{PID: remote, Heartbeat: fresh, StartedAt: started90m}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{slow}},
		{"other host, idle heartbeat", probe.Observations{PID: remote, Heartbeat: idle}, Thresholds{}, state.HealthDisconnected, state.DeliveryUnknown, []state.ReasonCode{disconn}},
		{"other host, no heartbeat", probe.Observations{PID: remote, Heartbeat: youngStart}, Thresholds{}, state.HealthDisconnected, state.DeliveryUnknown, []state.ReasonCode{disconn}},

		// Terminal entities.
		{"ended, process gone", probe.Observations{Terminal: true, PID: gone}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, stale heartbeat is irrelevant", probe.Observations{Terminal: true, PID: gone, Heartbeat: stalled}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, liveness unknown", probe.Observations{Terminal: true, PID: denied}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, process still alive", probe.Observations{Terminal: true, PID: alive, EndedAt: classifyNow.Add(-time.Minute)}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"ended, alive pid of unknown identity", probe.Observations{Terminal: true, PID: unverified}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, stale lock", probe.Observations{Terminal: true, PID: gone, Locks: probe.LockObservation{Present: []probe.LockFile{{Path: "/runs/.lock"}}}}, Thresholds{}, state.HealthDegraded, state.DeliveryUnknown, []state.ReasonCode{staleLock}},
		{"ended, alive and stale lock", probe.Observations{Terminal: true, PID: alive, Locks: probe.LockObservation{Present: []probe.LockFile{{Path: "/a"}, {Path: "/b"}}}}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned, staleLock}},
		{"ended, passed", probe.Observations{Terminal: true, PID: gone, Artifacts: passed}, Thresholds{}, state.HealthOK, state.DeliveryPassed, nil},

		// Delivery: artifact evidence third.
		{"not expected", probe.Observations{PID: alive, Heartbeat: fresh, Artifacts: artifacts(state.DeliveryNotExpected)}, Thresholds{}, state.HealthRunning, state.DeliveryNotExpected, nil},
		{"missing", probe.Observations{Terminal: true, PID: gone, Artifacts: artifacts(state.DeliveryMissing, check("review.md", true, probe.ArtifactMissing, "does not exist"))}, Thresholds{}, state.HealthOK, state.DeliveryMissing, []state.ReasonCode{state.RunDeliveryMissing}},
		{"partial", probe.Observations{Terminal: true, PID: gone, Artifacts: artifacts(state.DeliveryPartial, check("a.md", true, probe.ArtifactValid, ""), check("b.md", true, probe.ArtifactMissing, "does not exist"))}, Thresholds{}, state.HealthOK, state.DeliveryPartial, []state.ReasonCode{state.RunDeliveryPartial}},
		{"invalid, after a health reason", probe.Observations{PID: gone, Artifacts: artifacts(state.DeliveryInvalid, check("a.json", true, probe.ArtifactInvalid, "not valid JSON"))}, Thresholds{}, state.HealthProcessDead, state.DeliveryInvalid, []state.ReasonCode{dead, state.RunDeliveryInvalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Classify(tc.obs, tc.th, classifyNow)
			if r.Health != tc.health || r.Delivery != tc.delivery {
				t.Errorf("got %v/%v, want %v/%v", r.Health, r.Delivery, tc.health, tc.delivery)
			}
			var codes []state.ReasonCode
			for _, reason := range r.Reasons {
				codes = append(codes, reason.Code)
				if !state.Registered(reason.Code) {
					t.Errorf("unregistered code %q", reason.Code)
				}
				if reason.Message == "" || len(reason.Evidence) == 0 || reason.ClaimStatus != state.ClaimObserved {
					t.Errorf("reason %q lacks message, evidence or claim: %+v", reason.Code, reason)
				}
				for _, e := range reason.Evidence {
					if !state.ValidEvidenceKind(e.Kind) || e.Detail == "" || e.FetchedAt.IsZero() {
						t.Errorf("reason %q: bad evidence %+v", reason.Code, e)
					}
				}
			}
			if !reflect.DeepEqual(codes, tc.codes) || !reflect.DeepEqual(r.ReasonCodes(), tc.codes) {
				t.Errorf("reasons %v (codes %v), want %v", codes, r.ReasonCodes(), tc.codes)
			}
			for _, c := range tc.codes {
				if !r.HasReason(c) {
					t.Errorf("HasReason(%q) = false", c)
				}
			}
			if later := Classify(tc.obs, tc.th, classifyNow.Add(time.Second)); !sameFindings(r, later) {
				t.Error("a result differs from itself a second later")
			}
			if r.Liveness != tc.obs.PID.Liveness {
				t.Errorf("liveness %v, want %v", r.Liveness, tc.obs.PID.Liveness)
			}
		})
	}
}

func TestClassifyEvidenceReads(t *testing.T) {
	obs := probe.Observations{
		PID:       pidObs(probe.Dead, probe.CauseNoSuchProcess),
		Heartbeat: hbObs(probe.HeartbeatPosted, 71*time.Minute),
		Artifacts: artifacts(state.DeliveryInvalid, check("review.md", true, probe.ArtifactInvalid, "0 bytes < min 1")),
	}
	r := Classify(obs, Thresholds{}, classifyNow)
	var details []string
	for _, reason := range r.Reasons {
		for _, e := range reason.Evidence {
			details = append(details, e.Detail)
		}
	}
	want := []string{
		// As docs/reference/state-model.md's example: the pid and the heartbeat on one line.
		"pid 4242 not running (no such process; start time 1716517000.00; exit status not available); last heartbeat " + state.Stamp(classifyNow.Add(-71*time.Minute)) + " (posted heartbeat)",
		"review.md: 0 bytes < min 1",
	}
	if !reflect.DeepEqual(details, want) {
		t.Errorf("evidence details\n got %q\nwant %q", details, want)
	}
	if r.Reasons[1].Evidence[0].Kind != state.EvidenceArtifact || r.Reasons[1].Evidence[0].Path != "/runs/review.md" {
		t.Errorf("artifact evidence %+v", r.Reasons[1].Evidence[0])
	}
	ns := state.Normalize("running", "", r.Health, r.Delivery, r.Reasons, unixtime.FromSeconds(0))
	if ns.Severity != state.SeverityCritical || state.DisplayChain(ns, "review.md", true) != "Running · Process dead · review.md invalid" {
		t.Errorf("normalized: %v %q", ns.Severity, state.DisplayChain(ns, "review.md", true))
	}
	if n := len(r.Evidence()); n != 3 {
		t.Errorf("Evidence() lists %d observations, want pid, heartbeat and artifact", n)
	}
}

// sameFindings is what a sweep compares before it writes (the reaper's
// observe): health, delivery, liveness and state.SameFindings.
func sameFindings(a, b Result) bool {
	return a.Health == b.Health && a.Delivery == b.Delivery && a.Liveness == b.Liveness && state.SameFindings(a.Reasons, b.Reasons)
}

func TestResultEqual(t *testing.T) {
	obs := probe.Observations{PID: pidObs(probe.Alive, probe.CauseNone), Heartbeat: hbObs(probe.HeartbeatFile, 15*time.Minute)}
	a := Classify(obs, Thresholds{}, classifyNow)
	// A minute later the same heartbeat is a minute older: messages and
	// evidence name its moment, not its age, so nothing changed.
	obs.Heartbeat = hbObs(probe.HeartbeatFile, 15*time.Minute)
	obs.Heartbeat.Age += time.Minute
	b := Classify(obs, Thresholds{}, classifyNow.Add(time.Minute))
	if a.Reasons[0].Message != b.Reasons[0].Message || a.Reasons[0].Evidence[0].Detail != b.Reasons[0].Evidence[0].Detail {
		t.Errorf("a minute later the finding reads otherwise:\n%q %q\n%q %q", a.Reasons[0].Message, a.Reasons[0].Evidence[0].Detail, b.Reasons[0].Message, b.Reasons[0].Evidence[0].Detail)
	}
	if !sameFindings(a, b) {
		t.Error("same findings compare unequal")
	}
	// A newer heartbeat, still idle: the fact changed, and is rewritten.
	obs.Heartbeat = hbObs(probe.HeartbeatFile, 12*time.Minute)
	if e := Classify(obs, Thresholds{}, classifyNow); sameFindings(a, e) {
		t.Error("idle since two different moments compare equal")
	}
	obs.Heartbeat = hbObs(probe.HeartbeatFile, 2*time.Hour)
	c := Classify(obs, Thresholds{}, classifyNow)
	if sameFindings(a, c) {
		t.Error("idle and stalled compare equal")
	}
	obs.Heartbeat = hbObs(probe.HeartbeatFile, time.Minute)
	d := Classify(obs, Thresholds{}, classifyNow)
	if sameFindings(a, d) || sameFindings(d, a) {
		t.Error("idle and running compare equal")
	}
	if want := "idle after 10m without a heartbeat; none since " + state.Stamp(classifyNow.Add(-15*time.Minute)); a.Reasons[0].Message != want {
		t.Errorf("message %q, want %q", a.Reasons[0].Message, want)
	}
	if !a.Reasons[0].Since.Equal(classifyNow.Add(-15 * time.Minute)) {
		t.Errorf("since %v", a.Reasons[0].Since)
	}
	if got, want := state.Render(a.Reasons[0], classifyNow.Add(time.Minute)), a.Reasons[0].Message+", 16m ago"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

func TestResultEqualEvidenceIdentity(t *testing.T) {
	ended := func(locks ...string) Result {
		var present []probe.LockFile
		for _, l := range locks {
			present = append(present, probe.LockFile{Path: l, ModTime: classifyNow})
		}
		return Classify(probe.Observations{Terminal: true, PID: pidObs(probe.Dead, probe.CauseNoSuchProcess), Locks: probe.LockObservation{Present: present}}, Thresholds{}, classifyNow)
	}
	if !sameFindings(ended("/a"), ended("/a")) || sameFindings(ended("/a"), ended("/b")) || sameFindings(ended("/a"), ended("/a", "/b")) {
		t.Error("stale locks: equality does not follow the lock paths")
	}
	delivered := func(failing string) Result {
		return Classify(probe.Observations{Terminal: true, PID: pidObs(probe.Dead, probe.CauseNoSuchProcess), Artifacts: artifacts(state.DeliveryPartial,
			check("ok.md", true, probe.ArtifactValid, ""), check(failing, true, probe.ArtifactMissing, "does not exist"))}, Thresholds{}, classifyNow)
	}
	if !sameFindings(delivered("a.md"), delivered("a.md")) || sameFindings(delivered("a.md"), delivered("b.md")) {
		t.Error("artifacts: equality does not follow the failing artifact")
	}
}

func TestClassifyHealthyAllocatesNothing(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for name, obs := range map[string]probe.Observations{
		"healthy": {PID: pidObs(probe.Alive, probe.CauseNone), Heartbeat: hbObs(probe.HeartbeatFile, time.Minute), Artifacts: artifacts(state.DeliveryPassed)},
		"dead":    {PID: pidObs(probe.Dead, probe.CauseNoSuchProcess), Heartbeat: hbObs(probe.HeartbeatFile, time.Hour), Artifacts: artifacts(state.DeliveryMissing, check("a.md", true, probe.ArtifactMissing, "does not exist"))},
	} {
		n := testing.AllocsPerRun(100, func() { _ = Classify(obs, Thresholds{}, classifyNow) })
		if name == "healthy" && n != 0 {
			t.Errorf("%s: Classify allocates %v times", name, n)
		}
	}
}

// TestClassifyJudgesHeartbeatsOnlyWhileWorking: staleness means something
// only in a working state, and counts from the later of the last
// heartbeat and the start of the current state (issue 14, observation 8).
func TestClassifyJudgesHeartbeatsOnlyWhileWorking(t *testing.T) {
	for _, tc := range []struct {
		name       string
		waiting    bool
		stateSince time.Duration // before classifyNow; 0 = unknown
		hbAge      time.Duration
		want       state.Health
		since      time.Time // of the finding; zero = no finding
	}{
		{"working, stale", false, 0, 2 * time.Hour, state.HealthStalled, classifyNow.Add(-2 * time.Hour)},
		{"waiting, stale", true, 0, 2 * time.Hour, state.HealthRunning, time.Time{}},
		{"restarted a minute ago", false, time.Minute, 2 * time.Hour, state.HealthRunning, time.Time{}},
		{"restarted 15m ago", false, 15 * time.Minute, 2 * time.Hour, state.HealthIdle, classifyNow.Add(-15 * time.Minute)},
		{"heartbeat after the state began", false, 3 * time.Hour, 2 * time.Hour, state.HealthStalled, classifyNow.Add(-2 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := probe.Observations{PID: pidObs(probe.Alive, probe.CauseNone), Heartbeat: hbObs(probe.HeartbeatFile, tc.hbAge), Waiting: tc.waiting}
			if tc.stateSince > 0 {
				obs.StateSince = classifyNow.Add(-tc.stateSince)
			}
			r := Classify(obs, Thresholds{}, classifyNow)
			if r.Health != tc.want {
				t.Errorf("health %s, want %s (reasons %v)", r.Health, tc.want, r.ReasonCodes())
			}
			switch {
			case tc.since.IsZero() && len(r.Reasons) > 0:
				t.Errorf("reasons %v, want none", r.ReasonCodes())
			case !tc.since.IsZero() && (len(r.Reasons) != 1 || !r.Reasons[0].Since.Equal(tc.since)):
				t.Errorf("reasons %+v, want one since %v", r.Reasons, tc.since)
			}
		})
	}
}

// TestClassifyEndedByDeathKeepsProcessDead: an entity the watchdog ended
// because its process died does not become "Infra OK" at the next look
// (issue 14, observation 5); one that ended by itself does.
func TestClassifyEndedByDeathKeepsProcessDead(t *testing.T) {
	for _, tc := range []struct {
		name      string
		byDeath   bool
		pid       probe.PIDObservation
		want      state.Health
		wantCodes []state.ReasonCode
	}{
		{"ended by its death", true, pidObs(probe.Dead, probe.CauseNoSuchProcess), state.HealthProcessDead, []state.ReasonCode{state.RunHealthProcessDead}},
		{"ended by its death, another host", true, probe.PIDObservation{Liveness: probe.Unknown}, state.HealthProcessDead, nil},
		{"ended by itself", false, pidObs(probe.Dead, probe.CauseNoSuchProcess), state.HealthOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Classify(probe.Observations{Terminal: true, EndedByDeath: tc.byDeath, PID: tc.pid}, Thresholds{}, classifyNow)
			if r.Health != tc.want || !reflect.DeepEqual(r.ReasonCodes(), tc.wantCodes) {
				t.Errorf("health %s reasons %v, want %s %v", r.Health, r.ReasonCodes(), tc.want, tc.wantCodes)
			}
			ns := state.Normalize("aborted", "aborted", r.Health, state.DeliveryNotExpected, r.Reasons, classifyNow)
			if got := state.DisplayChain(ns, "", true); tc.byDeath && got != "Aborted · Process dead" {
				t.Errorf("display %q", got)
			}
		})
	}
}

func TestThresholdAge(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{45 * time.Second, "45s"}, {71 * time.Minute, "71m"}, {5 * time.Hour, "5h"}, {80 * time.Hour, "3d"},
	} {
		if got := thresholdAge(tc.d); got != tc.want {
			t.Errorf("thresholdAge(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestClassifyNamesHowItEnded: a death's finding says how the process
// ended when the kernel told, carries the moment, and cites the pid's
// evidence; a check stopped by its own bound is a finding, one its caller
// interrupted is none.
func TestClassifyNamesHowItEnded(t *testing.T) {
	at := classifyNow.Add(-time.Minute)
	for _, tc := range []struct {
		exit    *state.ExitStatus
		message string
	}{
		{&state.ExitStatus{Code: 3, At: at}, "process exited with status 3; dead since " + state.Stamp(at)},
		{&state.ExitStatus{Signal: 9, At: at}, "process was killed by SIGKILL; dead since " + state.Stamp(at)},
		{nil, "process is gone (no such process)"},
	} {
		pid := pidObs(probe.Dead, probe.CauseNoSuchProcess)
		pid.Subject.Exit = tc.exit
		r := Classify(probe.Observations{PID: pid, Terminal: true, EndedByDeath: true}, DefaultThresholds, classifyNow)
		if len(r.Reasons) == 0 || r.Reasons[0].Message != tc.message {
			t.Fatalf("reasons %+v, want %q", r.Reasons, tc.message)
		}
		if tc.exit != nil && !r.Reasons[0].Since.Equal(at) {
			t.Errorf("since %v, want %v", r.Reasons[0].Since, at)
		}
		if ev := r.Reasons[0].Evidence; len(ev) != 1 || ev[0].Detail != pid.Detail() {
			t.Errorf("evidence %+v, want %q", ev, pid.Detail())
		}
	}
	stopped := probe.ArtifactResult{Delivery: state.DeliveryUnknown, Stopped: "read 10000 entries", Root: "/runs"}
	r := Classify(probe.Observations{Terminal: true, Artifacts: stopped}, DefaultThresholds, classifyNow)
	if !r.HasReason(state.RunDeliveryCheckStopped) || !strings.Contains(r.Reasons[0].Message, "read 10000 entries") {
		t.Errorf("stopped: %+v", r.Reasons)
	}
	stopped.Interrupted = true
	if r := Classify(probe.Observations{Terminal: true, Artifacts: stopped}, DefaultThresholds, classifyNow); len(r.Reasons) != 0 || r.Delivery != state.DeliveryUnknown {
		t.Errorf("interrupted: %s %v", r.Delivery, r.ReasonCodes())
	}
}
