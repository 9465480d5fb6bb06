package probe

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// Liveness is the three-valued answer of a PID check (docs/reference/state-model.md, Probing). The zero
// value is Unknown: a liveness nobody checked is neither alive nor dead.
type Liveness uint8

// Liveness values. Dead needs a conclusive finding; anything inconclusive is
// Unknown, and Unknown is never acted upon.
const (
	Unknown Liveness = iota
	Alive
	Dead
)

// String returns "alive", "dead" or "unknown".
func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Dead:
		return "dead"
	}
	return "unknown"
}

// PIDCause says why a PID check gave its answer.
type PIDCause uint8

// PID check causes. CauseNone goes with Alive; the Dead causes are
// conclusive; the rest go with Unknown.
const (
	CauseNone PIDCause = iota
	// Unknown.
	CauseNoPID         // no pid recorded yet
	CauseOtherHost     // the pid lives on another host: not checked here
	CausePermission    // /proc denied us (EACCES, EPERM)
	CauseHidden        // /proc hides the pid but it exists (hidepid mounts)
	CauseUnreadable    // any other read error, or the boot time is unreadable
	CauseUnparsable    // /proc/<pid>/stat did not parse
	CauseIdentityUnset // alive, but no start time was recorded to verify it
	// Dead.
	CauseNoSuchProcess // no such pid
	CauseVanished      // it was there when we opened it, gone when we read it
	CauseZombie        // exited, not yet reaped by its parent (state Z or X)
	CausePIDReused     // the pid belongs to another process now
	CauseHostRebooted  // the recorded boot id is not the current one
	CauseReported      // the kernel reported its exit (pidfd, process connector): not looked at again
	CauseWatched       // alive: its pidfd, opened on the recorded identity, has not reported an exit
)

var causeNames = [...]string{
	CauseNone:          "none",
	CauseNoPID:         "no pid recorded yet",
	CauseOtherHost:     "other host",
	CausePermission:    "permission denied",
	CauseHidden:        "hidden by /proc",
	CauseUnreadable:    "unreadable",
	CauseUnparsable:    "unparsable",
	CauseIdentityUnset: "start time not recorded",
	CauseNoSuchProcess: "no such process",
	CauseVanished:      "vanished during the probe",
	CauseZombie:        "zombie",
	CausePIDReused:     "pid reused",
	CauseHostRebooted:  "host rebooted",
	CauseReported:      "exit reported by the kernel",
	CauseWatched:       "watched by its pidfd",
}

// String is a short human phrase for the cause.
func (c PIDCause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// ErrNoSuchProcess is returned (wrapped) by Identify when the pid does not
// exist or exits while it is being read.
var ErrNoSuchProcess = errors.New("no such process")

// Sentinels a processReader returns. errVanished wraps ErrNoSuchProcess:
// for Identify both mean "gone"; CheckPID keeps them apart as evidence.
var (
	errVanished   = fmt.Errorf("%w (vanished while being read)", ErrNoSuchProcess)
	errHidden     = errors.New("pid exists but /proc does not show it (hidepid?)")
	errPermission = errors.New("permission denied")
	errUnparsable = errors.New("unparsable /proc/<pid>/stat")
)

// userHZ is fixed at 100 in the Linux ABI, whatever the kernel's HZ.
const userHZ = 100

// startTimeTolerance: btime is whole seconds and moves with clock steps.
const startTimeTolerance = time.Second

// procStat is what a processReader returns for one process.
type procStat struct {
	state      byte
	ppid       int
	startTicks uint64    // clock ticks after boot; 0 when the reader has none
	startTime  time.Time // filled by readers without ticks
}

// processReader reads the identity of one process: procfsReader on Linux
// (the hot path, ADR-0004), gopsutilReader elsewhere.
type processReader interface {
	// read returns ErrNoSuchProcess, errVanished, errHidden, errPermission,
	// errUnparsable, or another error meaning "could not read".
	read(pid int, sc *scratch) (procStat, error)
	// ticks reports whether read fills startTicks (and start times must be
	// derived from the boot time).
	ticks() bool
}

// goneReader is a processReader that can also tell, by one syscall, a pid
// that names no process for certain (false: cannot tell).
type goneReader interface{ gone(pid int) bool }

// scratch holds the buffers one probe call reuses, pooled so the hot path
// allocates nothing for them.
type scratch struct {
	path []byte // NUL-terminated path under construction
	stat []byte // contents of /proc/<pid>/stat
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{path: make([]byte, 0, 256), stat: make([]byte, 1024)}
}}

func getScratch() *scratch   { return scratchPool.Get().(*scratch) }
func putScratch(sc *scratch) { scratchPool.Put(sc) }

// statPath stats dir/rel without allocating. A NUL inside a name would stat
// another file: that is EINVAL.
func (sc *scratch) statPath(dir, rel string, st *unix.Stat_t, follow bool) error {
	p := append(sc.path[:0], dir...)
	if rel != "" {
		p = append(p, '/')
		p = append(p, rel...)
	}
	if bytes.IndexByte(p, 0) >= 0 {
		return unix.EINVAL
	}
	p = append(p, 0)
	sc.path = p
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	for {
		err := fstatat(p, st, flags)
		if err != unix.EINTR {
			return err
		}
	}
}

// Identity is who a process is: enough to tell it from a later process that
// reuses its pid.
type Identity struct {
	PID int
	// StartTime is when the process started.
	StartTime time.Time
	// StartTicks compares exactly within one boot (0: none on this platform).
	StartTicks uint64
	// State is the /proc state letter (R, S, D, Z, T, ...).
	State byte
	PPID  int
	// HostID and BootID are this host's, for the record.
	HostID string
	BootID string
}

// Identify reads the identity of a live pid to record at registration; a
// missing or zombie pid wraps ErrNoSuchProcess.
func (h *Host) Identify(pid int) (Identity, error) {
	if pid <= 0 {
		return Identity{}, fmt.Errorf("identify pid %d: not a process id", pid)
	}
	sc := getScratch()
	defer putScratch(sc)
	r := h.processes()
	ps, err := r.read(pid, sc)
	if err != nil {
		return Identity{}, fmt.Errorf("identify pid %d: %w", pid, err)
	}
	if ps.state == 'Z' || ps.state == 'X' {
		return Identity{}, fmt.Errorf("identify pid %d: %w (zombie)", pid, ErrNoSuchProcess)
	}
	id := Identity{PID: pid, StartTicks: ps.startTicks, StartTime: ps.startTime, State: ps.state, PPID: ps.ppid, HostID: h.HostID()}
	if r.ticks() {
		bt, err := h.bootTime()
		if err != nil {
			return Identity{}, fmt.Errorf("identify pid %d: %w", pid, err)
		}
		id.StartTime = startFromTicks(bt, ps.startTicks)
	}
	id.BootID, _ = h.BootID() // best effort: an empty boot id disables the reboot check
	return id, nil
}

// StartOf is a process's start time for registration. Unlike Identify it
// accepts a zombie: a fast-exiting child not yet reaped is still that process.
func (h *Host) StartOf(pid int) (time.Time, uint64, error) {
	if pid <= 0 {
		return time.Time{}, 0, fmt.Errorf("start of pid %d: not a process id", pid)
	}
	sc := getScratch()
	defer putScratch(sc)
	r := h.processes()
	ps, err := r.read(pid, sc)
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("start of pid %d: %w", pid, err)
	}
	if !r.ticks() {
		return ps.startTime, ps.startTicks, nil
	}
	bt, err := h.bootTime()
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("start of pid %d: %w", pid, err)
	}
	return startFromTicks(bt, ps.startTicks), ps.startTicks, nil
}

// startFromTicks is the wall-clock start of a process that started ticks
// clock ticks after a boot at btime (Unix seconds).
func startFromTicks(btime int64, ticks uint64) time.Time {
	return time.Unix(btime, 0).Add(time.Duration(ticks) * (time.Second / userHZ))
}

// PIDSubject is what was recorded about a process: the pid and, to tell it
// from a later process reusing the pid, its identity. Zero means unknown.
type PIDSubject struct {
	PID        int
	StartTime  time.Time // zero = not recorded
	StartTicks uint64    // kernel start ticks; 0 = not recorded
	HostID     string    // "" = this host
	BootID     string    // "" = not recorded
	// Exit is how the process ended, when the kernel said; nil = not known.
	Exit *state.ExitStatus
	// Died: the kernel reported this process's exit; Dead without reading /proc.
	Died bool
	// Watched: the daemon holds this very process's pidfd (its identity
	// checked when opened) and no exit came: Alive without reading /proc.
	Watched bool
}

// Reported is the check of a process whose exit the kernel reported
// (Died): Dead, with no read of /proc.
func Reported(t PIDSubject) PIDObservation {
	t.Died = true
	return PIDObservation{Subject: t, Liveness: Dead, Cause: CauseReported}
}

// PIDObservation is the result of one PID check; plain data, so a healthy
// check allocates nothing.
type PIDObservation struct {
	Subject  PIDSubject
	Liveness Liveness
	Cause    PIDCause
	// What /proc showed; zero when the read failed.
	State      byte
	PPID       int
	StartTime  time.Time
	StartTicks uint64
	// BootID is the current boot id when the check compared it.
	BootID string
	// HostID is this host's id when the check found another one recorded.
	HostID string
	// Err is the read error behind an Unknown answer.
	Err error
}

// Checked reports whether a pid was recorded at all.
func (o PIDObservation) Checked() bool { return o.Subject.PID > 0 }

// OtherHost reports whether the pid lives on another host and was therefore
// not checked.
func (o PIDObservation) OtherHost() bool { return o.Cause == CauseOtherHost }

// IdentityVerified reports whether the pid is alive and its recorded start
// time matched: not a newcomer that reused the pid.
func (o PIDObservation) IdentityVerified() bool {
	return o.Liveness == Alive && (o.Cause == CauseNone || o.Cause == CauseWatched)
}

// CheckPID decides whether the recorded process is alive, dead or unknown
// (docs/reference/state-model.md, Probing); unreadable /proc is Unknown, never Dead.
func (h *Host) CheckPID(t PIDSubject) PIDObservation {
	sc := getScratch()
	o := h.checkPID(t, false, sc)
	putScratch(sc)
	return o
}

// checkPID is CheckPID; gone asks the kernel first (Subject.Gone).
func (h *Host) checkPID(t PIDSubject, gone bool, sc *scratch) PIDObservation {
	o := PIDObservation{Subject: t}
	if t.PID <= 0 {
		o.Cause = CauseNoPID
		return o
	}
	if t.Died {
		return Reported(t)
	}
	if t.Watched {
		return PIDObservation{Subject: t, Liveness: Alive, Cause: CauseWatched, StartTime: t.StartTime, StartTicks: t.StartTicks}
	}
	if t.HostID != "" {
		if self := h.HostID(); self != "" && self != t.HostID {
			o.Cause, o.HostID = CauseOtherHost, self
			return o
		}
	}
	sameBoot := false
	if t.BootID != "" {
		// An unreadable boot id proves nothing either way: fall through to
		// the pid and compare start times by the wall clock.
		if cur, err := h.BootID(); err == nil {
			o.BootID = cur
			if cur != t.BootID {
				o.Liveness, o.Cause = Dead, CauseHostRebooted
				return o
			}
			sameBoot = true
		}
	}

	r := h.processes()
	if g, ok := r.(goneReader); ok && gone && g.gone(t.PID) {
		o.Err, o.Liveness, o.Cause = ErrNoSuchProcess, Dead, CauseNoSuchProcess
		return o
	}
	ps, err := r.read(t.PID, sc)
	if err != nil {
		o.Err = err
		switch {
		case errors.Is(err, errVanished):
			o.Liveness, o.Cause = Dead, CauseVanished
		case errors.Is(err, ErrNoSuchProcess):
			o.Liveness, o.Cause = Dead, CauseNoSuchProcess
		case errors.Is(err, errHidden):
			o.Cause = CauseHidden
		case errors.Is(err, errPermission):
			o.Cause = CausePermission
		case errors.Is(err, errUnparsable):
			o.Cause = CauseUnparsable
		default:
			o.Cause = CauseUnreadable
		}
		return o
	}
	o.State, o.PPID, o.StartTicks, o.StartTime = ps.state, ps.ppid, ps.startTicks, ps.startTime
	exact := t.StartTicks != 0 && sameBoot && o.StartTicks != 0
	if r.ticks() {
		bt, err := h.bootTime()
		switch {
		case err == nil:
			o.StartTime = startFromTicks(bt, ps.startTicks)
		case !exact && !t.StartTime.IsZero():
			// The wall-clock comparison needs the boot time.
			o.Err, o.Cause = err, CauseUnreadable
			return o
		}
	}

	switch {
	case exact:
		if o.StartTicks != t.StartTicks {
			o.Liveness, o.Cause = Dead, CausePIDReused
			return o
		}
	case !t.StartTime.IsZero() && !o.StartTime.IsZero():
		if d := o.StartTime.Sub(t.StartTime); d > startTimeTolerance || d < -startTimeTolerance {
			o.Liveness, o.Cause = Dead, CausePIDReused
			return o
		}
	default:
		o.Cause = CauseIdentityUnset
	}
	if o.State == 'Z' || o.State == 'X' {
		o.Liveness, o.Cause = Dead, CauseZombie
		return o
	}
	o.Liveness = Alive
	return o
}

// Evidence describes the observation for a person, e.g. "pid 4242 not
// running (no such process; recorded start time 1716517000.12)".
func (o PIDObservation) Evidence(checkedAt time.Time) state.EvidenceRef {
	return o.evidence(unixtime.Of(checkedAt))
}

func (o PIDObservation) evidence(fetchedAt unixtime.Time) state.EvidenceRef {
	var m timeMarks
	detail, times := m.done(o.writeDetail(make([]byte, 0, 160), &m))
	return state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: detail, FetchedAt: fetchedAt, Times: times}
}

// Detail is the Evidence detail line.
func (o PIDObservation) Detail() string { return string(o.appendDetail(make([]byte, 0, 160))) }

// appendDetail appends the detail line to b.
func (o PIDObservation) appendDetail(b []byte) []byte { return o.writeDetail(b, nil) }

// writeDetail appends the detail line to b, marking in m (when not nil)
// the moments it names: the start times.
func (o PIDObservation) writeDetail(b []byte, m *timeMarks) []byte {
	if o.Cause == CauseNoPID {
		return append(b, "no pid recorded yet"...)
	}
	b = append(b, "pid "...)
	b = strconv.AppendInt(b, int64(o.Subject.PID), 10)
	switch {
	case o.Cause == CauseOtherHost:
		b = append(b, " is on host "...)
		b = append(b, o.Subject.HostID...)
		b = append(b, ", this is "...)
		b = append(b, o.HostID...)
		b = append(b, ": not checked"...)
		return b
	case o.Cause == CauseHostRebooted:
		b = append(b, " not running: host rebooted (boot id "...)
		b = append(b, o.BootID...)
		b = append(b, ", recorded "...)
		b = append(b, o.Subject.BootID...)
		b = append(b, ')')
		return b
	case o.Liveness == Dead && o.Cause == CausePIDReused:
		b = append(b, " reused by another process (start time "...)
		b = m.unix(b, o.StartTime)
		b = append(b, ", recorded "...)
		b = m.unix(b, o.Subject.StartTime)
		if o.Subject.StartTicks != 0 {
			b = append(b, "; start ticks "...)
			b = strconv.AppendUint(b, o.StartTicks, 10)
			b = append(b, ", recorded "...)
			b = strconv.AppendUint(b, o.Subject.StartTicks, 10)
		}
		if x := o.Subject.Exit; x != nil {
			// Seen to die before the pid was taken again.
			b = x.AppendHow(append(b, "; it "...))
		}
		b = append(b, ')')
		return b
	case o.Liveness == Dead:
		// How it ended leads when the kernel said; otherwise never guess a status.
		if x := o.Subject.Exit; x != nil {
			b = x.AppendHow(append(b, ' '))
			b = append(b, " ("...)
		} else {
			b = append(b, " not running ("...)
		}
		b = append(b, o.Cause.String()...)
		if o.State != 0 {
			b = append(b, ", state "...)
			b = append(b, o.State)
		}
		if !o.Subject.StartTime.IsZero() {
			b = append(b, "; start time "...)
			b = m.unix(b, o.Subject.StartTime)
		}
		if o.Subject.Exit == nil {
			b = append(b, "; "+state.ExitNotAvailable...)
		}
		b = append(b, ')')
		return b
	case o.Liveness == Alive && o.Cause == CauseWatched:
		b = append(b, " alive (watched by its pidfd; start time "...)
		b = m.unix(b, o.StartTime)
		return append(b, ')')
	case o.Liveness == Alive:
		b = append(b, " alive (state "...)
		b = append(b, o.State)
		b = append(b, ", start time "...)
		b = m.unix(b, o.StartTime)
		b = append(b, ", ppid "...)
		b = strconv.AppendInt(b, int64(o.PPID), 10)
		if o.Cause == CauseIdentityUnset {
			b = append(b, "; no start time recorded, identity not verified"...)
		}
		b = append(b, ')')
		return b
	}
	b = append(b, " liveness unknown ("...)
	b = append(b, o.Cause.String()...)
	if o.Err != nil {
		b = append(b, ": "...)
		b = append(b, o.Err.Error()...)
	}
	b = append(b, ')')
	return b
}

// timeMarks are the moments an evidence line names, each formatted once.
type timeMarks struct {
	at [4]timeMark // the most a line names: two start times, a heartbeat and its claim
	n  int
}

type timeMark struct {
	from, to int
	t        time.Time
}

// unix appends t as Unix seconds (appendUnix) and marks it.
func (m *timeMarks) unix(b []byte, t time.Time) []byte {
	from := len(b)
	b = appendUnix(b, t)
	m.add(from, len(b), t)
	return b
}

// stamp appends t as a stored message does (appendStamp) and marks it.
func (m *timeMarks) stamp(b []byte, t time.Time) []byte {
	from := len(b)
	b = appendStamp(b, t)
	m.add(from, len(b), t)
	return b
}

func (m *timeMarks) add(from, to int, t time.Time) {
	if m != nil && m.n < len(m.at) {
		m.at[m.n] = timeMark{from: from, to: to, t: t}
		m.n++
	}
}

// done is line b as text and the moments marked in it, in its order (nil
// for none), their texts sharing the line's one allocation.
func (m *timeMarks) done(b []byte) (string, []state.EvidenceTime) {
	s := string(b)
	if m.n == 0 {
		return s, nil
	}
	ts := make([]state.EvidenceTime, m.n)
	for i, k := range m.at[:m.n] {
		ts[i] = state.TimeOf(s[k.from:k.to], k.t)
	}
	return s, ts
}

// appendUnix appends t as Unix seconds to the hundredth (a clock tick),
// the way evidence lines show times.
func appendUnix(b []byte, t time.Time) []byte {
	return strconv.AppendFloat(b, unixtime.Seconds(t), 'f', 2, 64)
}
