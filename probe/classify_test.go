package probe

import (
	"reflect"
	"testing"
	"time"

	"watchdog/state"
)

var classifyNow = time.Unix(1716520000, 0)

func pidObs(l Liveness, c PIDCause) PIDObservation {
	o := PIDObservation{Subject: PIDSubject{PID: 4242, StartTime: unixAt(1716517000)}, Liveness: l, Cause: c}
	if l == Alive {
		o.State, o.StartTime, o.PPID = 'S', unixAt(1716517000), 1
	}
	if c == CauseOtherHost {
		o.Subject.HostID, o.HostID = "host-b", "host-a"
	}
	return o
}

func hbObs(src HeartbeatSource, age time.Duration) HeartbeatObservation {
	at := classifyNow.Add(-age)
	return HeartbeatObservation{Source: src, Claimed: at, At: at, Age: age}
}

func artifacts(d state.Delivery, checks ...ArtifactCheck) ArtifactResult {
	return ArtifactResult{Delivery: d, Checks: checks}
}

func check(path string, required bool, s ArtifactStatus, problem string) ArtifactCheck {
	return ArtifactCheck{Spec: state.ArtifactSpec{Path: path, Required: required}, Status: s, Rel: path, Root: "/runs", Problem: problem}
}

func TestClassify(t *testing.T) {
	var (
		alive      = pidObs(Alive, CauseNone)
		unverified = pidObs(Alive, CauseIdentityUnset)
		gone       = pidObs(Dead, CauseNoSuchProcess)
		zombie     = pidObs(Dead, CauseZombie)
		vanished   = pidObs(Dead, CauseVanished)
		reused     = pidObs(Dead, CausePIDReused)
		rebooted   = pidObs(Dead, CauseHostRebooted)
		denied     = pidObs(Unknown, CausePermission)
		noPID      = PIDObservation{Cause: CauseNoPID}
		remote     = pidObs(Unknown, CauseOtherHost)

		fresh      = hbObs(HeartbeatFile, time.Minute)
		idle       = hbObs(HeartbeatFile, 15*time.Minute)
		stalled    = hbObs(HeartbeatPosted, 2*time.Hour)
		youngStart = hbObs(HeartbeatFromStart, time.Minute)
		oldStart   = hbObs(HeartbeatFromStart, 2*time.Hour)
		skewed     = HeartbeatObservation{Source: HeartbeatFile, Claimed: classifyNow.Add(time.Hour), At: classifyNow, Skew: time.Hour}

		started90m = classifyNow.Add(-90 * time.Minute)
		started4h  = classifyNow.Add(-4 * time.Hour)
		passed     = artifacts(state.DeliveryPassed, check("review.md", true, ArtifactValid, ""))
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
		obs      Observations
		th       Thresholds
		health   state.Health
		delivery state.Delivery
		codes    []state.ReasonCode
	}{
		// Liveness first: a conclusive death wins over everything.
		{"dead: no such pid", Observations{PID: gone, Heartbeat: fresh}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: zombie", Observations{PID: zombie}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: vanished", Observations{PID: vanished}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead: pid reused", Observations{PID: reused}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{pidReused}},
		{"dead: host rebooted", Observations{PID: rebooted}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{hostReboot}},
		{"dead beats stalled", Observations{PID: gone, Heartbeat: stalled}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},
		{"dead beats orphaned", Observations{PID: gone, Supervisor: gone, ParentTerminal: true}, Thresholds{}, state.HealthProcessDead, state.DeliveryUnknown, []state.ReasonCode{dead}},

		// Alive: orphans, then heartbeat staleness.
		{"orphaned: supervisor dead", Observations{PID: alive, Supervisor: gone, Heartbeat: fresh}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"orphaned: parent ended", Observations{PID: alive, ParentTerminal: true, Heartbeat: stalled}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"supervisor unknown is not orphaned", Observations{PID: alive, Supervisor: denied, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, stalled", Observations{PID: alive, Heartbeat: stalled}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},
		{"alive, never sent one, old", Observations{PID: alive, Heartbeat: oldStart}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},
		{"alive, idle", Observations{PID: alive, Heartbeat: idle}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"alive, fresh", Observations{PID: alive, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, identity unverified", Observations{PID: unverified, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, heartbeat age unknown", Observations{PID: alive}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, slow", Observations{PID: alive, Heartbeat: fresh, StartedAt: started90m}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{slow}},
		{"alive, past slow_until", Observations{PID: alive, Heartbeat: fresh, StartedAt: started4h}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"alive, idle is not slow", Observations{PID: alive, Heartbeat: idle, StartedAt: started90m}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"alive, heartbeat from the future", Observations{PID: alive, Heartbeat: skewed}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{skew}},
		{"custom idle_after", Observations{PID: alive, Heartbeat: hbObs(HeartbeatFile, 2*time.Minute)}, Thresholds{IdleAfter: time.Minute}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{idleCode}},
		{"custom stalled_after", Observations{PID: alive, Heartbeat: idle}, Thresholds{IdleAfter: time.Minute, StalledAfter: 5 * time.Minute}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{stalledCode}},

		// Unknown liveness: never process_dead.
		{"unknown, nothing else", Observations{PID: denied, Heartbeat: youngStart}, Thresholds{}, state.HealthUnknown, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"unknown, fresh heartbeat", Observations{PID: denied, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"unknown, idle", Observations{PID: denied, Heartbeat: idle}, Thresholds{}, state.HealthIdle, state.DeliveryUnknown, []state.ReasonCode{unknown, idleCode}},
		{"unknown, stalled", Observations{PID: denied, Heartbeat: stalled}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{unknown, stalledCode}},
		{"no pid yet", Observations{PID: noPID}, Thresholds{}, state.HealthUnknown, state.DeliveryUnknown, []state.ReasonCode{unknown}},
		{"no pid yet, never sent a heartbeat, old", Observations{PID: noPID, Heartbeat: oldStart}, Thresholds{}, state.HealthStalled, state.DeliveryUnknown, []state.ReasonCode{unknown, stalledCode}},

		// Another host: disconnected unless a fresh heartbeat.
		{"other host, fresh heartbeat", Observations{PID: remote, Heartbeat: fresh}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, nil},
		{"other host, fresh, slow", Observations{PID: remote, Heartbeat: fresh, StartedAt: started90m}, Thresholds{}, state.HealthRunning, state.DeliveryUnknown, []state.ReasonCode{slow}},
		{"other host, idle heartbeat", Observations{PID: remote, Heartbeat: idle}, Thresholds{}, state.HealthDisconnected, state.DeliveryUnknown, []state.ReasonCode{disconn}},
		{"other host, no heartbeat", Observations{PID: remote, Heartbeat: youngStart}, Thresholds{}, state.HealthDisconnected, state.DeliveryUnknown, []state.ReasonCode{disconn}},

		// Terminal entities.
		{"ended, process gone", Observations{Terminal: true, PID: gone}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, stale heartbeat is irrelevant", Observations{Terminal: true, PID: gone, Heartbeat: stalled}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, liveness unknown", Observations{Terminal: true, PID: denied}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, process still alive", Observations{Terminal: true, PID: alive, EndedAt: classifyNow.Add(-time.Minute)}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned}},
		{"ended, alive pid of unknown identity", Observations{Terminal: true, PID: unverified}, Thresholds{}, state.HealthOK, state.DeliveryUnknown, nil},
		{"ended, stale lock", Observations{Terminal: true, PID: gone, Locks: LockObservation{Present: []LockFile{{Path: "/runs/.lock"}}}}, Thresholds{}, state.HealthDegraded, state.DeliveryUnknown, []state.ReasonCode{staleLock}},
		{"ended, alive and stale lock", Observations{Terminal: true, PID: alive, Locks: LockObservation{Present: []LockFile{{Path: "/a"}, {Path: "/b"}}}}, Thresholds{}, state.HealthOrphaned, state.DeliveryUnknown, []state.ReasonCode{orphaned, staleLock}},
		{"ended, passed", Observations{Terminal: true, PID: gone, Artifacts: passed}, Thresholds{}, state.HealthOK, state.DeliveryPassed, nil},

		// Delivery: artifact evidence third.
		{"not expected", Observations{PID: alive, Heartbeat: fresh, Artifacts: artifacts(state.DeliveryNotExpected)}, Thresholds{}, state.HealthRunning, state.DeliveryNotExpected, nil},
		{"missing", Observations{Terminal: true, PID: gone, Artifacts: artifacts(state.DeliveryMissing, check("review.md", true, ArtifactMissing, "does not exist"))}, Thresholds{}, state.HealthOK, state.DeliveryMissing, []state.ReasonCode{state.RunDeliveryMissing}},
		{"partial", Observations{Terminal: true, PID: gone, Artifacts: artifacts(state.DeliveryPartial, check("a.md", true, ArtifactValid, ""), check("b.md", true, ArtifactMissing, "does not exist"))}, Thresholds{}, state.HealthOK, state.DeliveryPartial, []state.ReasonCode{state.RunDeliveryPartial}},
		{"invalid, after a health reason", Observations{PID: gone, Artifacts: artifacts(state.DeliveryInvalid, check("a.json", true, ArtifactInvalid, "not valid JSON"))}, Thresholds{}, state.HealthProcessDead, state.DeliveryInvalid, []state.ReasonCode{dead, state.RunDeliveryInvalid}},
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
	obs := Observations{
		PID:       pidObs(Dead, CauseNoSuchProcess),
		Heartbeat: hbObs(HeartbeatPosted, 71*time.Minute),
		Artifacts: artifacts(state.DeliveryInvalid, check("review.md", true, ArtifactInvalid, "0 bytes < min 1")),
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
	ns := state.Normalize("running", "", r.Health, r.Delivery, r.Reasons, unixAt(0))
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
	obs := Observations{PID: pidObs(Alive, CauseNone), Heartbeat: hbObs(HeartbeatFile, 15*time.Minute)}
	a := Classify(obs, Thresholds{}, classifyNow)
	// A minute later the same heartbeat is a minute older: messages and
	// evidence name its moment, not its age, so nothing changed.
	obs.Heartbeat = hbObs(HeartbeatFile, 15*time.Minute)
	obs.Heartbeat.Age += time.Minute
	b := Classify(obs, Thresholds{}, classifyNow.Add(time.Minute))
	if a.Reasons[0].Message != b.Reasons[0].Message || a.Reasons[0].Evidence[0].Detail != b.Reasons[0].Evidence[0].Detail {
		t.Errorf("a minute later the finding reads otherwise:\n%q %q\n%q %q", a.Reasons[0].Message, a.Reasons[0].Evidence[0].Detail, b.Reasons[0].Message, b.Reasons[0].Evidence[0].Detail)
	}
	if !sameFindings(a, b) {
		t.Error("same findings compare unequal")
	}
	// A newer heartbeat, still idle: the fact changed, and is rewritten.
	obs.Heartbeat = hbObs(HeartbeatFile, 12*time.Minute)
	if e := Classify(obs, Thresholds{}, classifyNow); sameFindings(a, e) {
		t.Error("idle since two different moments compare equal")
	}
	obs.Heartbeat = hbObs(HeartbeatFile, 2*time.Hour)
	c := Classify(obs, Thresholds{}, classifyNow)
	if sameFindings(a, c) {
		t.Error("idle and stalled compare equal")
	}
	obs.Heartbeat = hbObs(HeartbeatFile, time.Minute)
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
		var present []LockFile
		for _, l := range locks {
			present = append(present, LockFile{Path: l, ModTime: classifyNow})
		}
		return Classify(Observations{Terminal: true, PID: pidObs(Dead, CauseNoSuchProcess), Locks: LockObservation{Present: present}}, Thresholds{}, classifyNow)
	}
	if !sameFindings(ended("/a"), ended("/a")) || sameFindings(ended("/a"), ended("/b")) || sameFindings(ended("/a"), ended("/a", "/b")) {
		t.Error("stale locks: equality does not follow the lock paths")
	}
	delivered := func(failing string) Result {
		return Classify(Observations{Terminal: true, PID: pidObs(Dead, CauseNoSuchProcess), Artifacts: artifacts(state.DeliveryPartial,
			check("ok.md", true, ArtifactValid, ""), check(failing, true, ArtifactMissing, "does not exist"))}, Thresholds{}, classifyNow)
	}
	if !sameFindings(delivered("a.md"), delivered("a.md")) || sameFindings(delivered("a.md"), delivered("b.md")) {
		t.Error("artifacts: equality does not follow the failing artifact")
	}
}

func TestClassifyHealthyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	for name, obs := range map[string]Observations{
		"healthy": {PID: pidObs(Alive, CauseNone), Heartbeat: hbObs(HeartbeatFile, time.Minute), Artifacts: artifacts(state.DeliveryPassed)},
		"dead":    {PID: pidObs(Dead, CauseNoSuchProcess), Heartbeat: hbObs(HeartbeatFile, time.Hour), Artifacts: artifacts(state.DeliveryMissing, check("a.md", true, ArtifactMissing, "does not exist"))},
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
			obs := Observations{PID: pidObs(Alive, CauseNone), Heartbeat: hbObs(HeartbeatFile, tc.hbAge), Waiting: tc.waiting}
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
		pid       PIDObservation
		want      state.Health
		wantCodes []state.ReasonCode
	}{
		{"ended by its death", true, pidObs(Dead, CauseNoSuchProcess), state.HealthProcessDead, []state.ReasonCode{state.RunHealthProcessDead}},
		{"ended by its death, another host", true, PIDObservation{Liveness: Unknown}, state.HealthProcessDead, nil},
		{"ended by itself", false, pidObs(Dead, CauseNoSuchProcess), state.HealthOK, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Classify(Observations{Terminal: true, EndedByDeath: tc.byDeath, PID: tc.pid}, Thresholds{}, classifyNow)
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
