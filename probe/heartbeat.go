package probe

import (
	"errors"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// HeartbeatSource says where a heartbeat time came from.
type HeartbeatSource uint8

// Heartbeat sources. HeartbeatNone means the age is unknown: no start time
// to age from, or the heartbeat file could not be read.
const (
	HeartbeatNone      HeartbeatSource = iota
	HeartbeatFile                      // the heartbeat file's mtime
	HeartbeatPosted                    // a heartbeat posted to the API or CLI
	HeartbeatFromStart                 // never sent one: the entity ages from its start
)

// String names the source for evidence.
func (s HeartbeatSource) String() string {
	switch s {
	case HeartbeatFile:
		return "heartbeat file"
	case HeartbeatPosted:
		return "posted heartbeat"
	case HeartbeatFromStart:
		return "start"
	}
	return "none"
}

// clockSkewTolerance is how far in the future a heartbeat may be before it
// is reported as clock skew: two clocks disagree by a little.
const clockSkewTolerance = time.Second

// HeartbeatObservation is the latest sign of life and its age.
type HeartbeatObservation struct {
	Source HeartbeatSource
	// File is the heartbeat file checked, if any; FileMissing says it did
	// not exist (no heartbeat from it) and FileErr holds any other error.
	File        string
	FileMissing bool
	FileErr     error
	// Claimed is the time as the source gave it.
	Claimed time.Time
	// At is the time judged: Claimed, or, when Claimed lies more than a
	// second in the future, a time no later than now (see CheckHeartbeat).
	At time.Time
	// Skew is how far Claimed was ahead of now when it was clamped; 0 when
	// it was not.
	Skew time.Duration
	// Age is now - At, never negative; meaningful unless Source is
	// HeartbeatNone.
	Age time.Duration
	// Progress is the note of the latest posted heartbeat.
	Progress string
}

// Known reports whether the age means anything.
func (o HeartbeatObservation) Known() bool { return o.Source != HeartbeatNone }

// Real reports whether the entity itself sent a heartbeat (as opposed to
// aging from its start).
func (o HeartbeatObservation) Real() bool {
	return o.Source == HeartbeatFile || o.Source == HeartbeatPosted
}

// CheckHeartbeat finds the latest heartbeat: the file's mtime or postedAt,
// else the start. A file that cannot be stat'ed is a broken check, not a
// stale heartbeat. A future mtime is replaced by the ctime, so a sender
// that wrote a far-future mtime and died still ages.
func CheckHeartbeat(file string, postedAt, startedAt time.Time, now time.Time) HeartbeatObservation {
	sc := getScratch()
	defer putScratch(sc)
	return checkHeartbeat(sc, file, postedAt, startedAt, now)
}

func checkHeartbeat(sc *scratch, file string, postedAt, startedAt time.Time, now time.Time) HeartbeatObservation {
	o := HeartbeatObservation{File: file}
	var fileAt, fileCtime time.Time
	if file != "" {
		var st unix.Stat_t
		err := sc.statPath(file, "", &st, true)
		switch {
		case err == nil:
			fileAt = time.Unix(st.Mtim.Unix())
			fileCtime = time.Unix(st.Ctim.Unix())
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR):
			o.FileMissing = true
		default:
			o.FileErr = &fs.PathError{Op: "stat", Path: file, Err: err}
		}
	}
	return o.from(fileAt, fileCtime, postedAt, startedAt, now)
}

// checkHeartbeat is CheckHeartbeat of t's file, with no stat when its mtime
// is known (HeartbeatFileKnown).
func (t *Subject) checkHeartbeat(startedAt, now time.Time) HeartbeatObservation {
	if !t.HeartbeatFileKnown || t.HeartbeatFile == "" {
		return CheckHeartbeat(t.HeartbeatFile, t.HeartbeatAt, startedAt, now)
	}
	o := HeartbeatObservation{File: t.HeartbeatFile, FileMissing: t.HeartbeatFileAt.IsZero()}
	return o.from(t.HeartbeatFileAt, t.HeartbeatFileAt, t.HeartbeatAt, startedAt, now)
}

// from reads the heartbeat's source and age from the file's times (zero: none).
func (o HeartbeatObservation) from(fileAt, fileCtime, posted, startedAt, now time.Time) HeartbeatObservation {
	switch {
	case !fileAt.IsZero() && (posted.IsZero() || !fileAt.Before(posted)):
		o.Source, o.Claimed = HeartbeatFile, fileAt
	case !posted.IsZero():
		o.Source, o.Claimed = HeartbeatPosted, posted
	case o.FileErr != nil:
		return o // the check broke: age unknown
	case !startedAt.IsZero():
		o.Source, o.Claimed = HeartbeatFromStart, startedAt
	default:
		return o
	}

	o.At = o.Claimed
	if ahead := o.Claimed.Sub(now); ahead > 0 {
		o.At = now
		if ahead > clockSkewTolerance {
			o.Skew = ahead
			if o.Source == HeartbeatFile && fileCtime.Before(now) {
				o.At = fileCtime
			}
		}
	}
	o.Age = now.Sub(o.At)
	return o
}

// Evidence describes the heartbeat as a moment, never an age, so a sweep over
// an unchanged host rewrites nothing.
func (o HeartbeatObservation) Evidence(checkedAt time.Time) state.EvidenceRef {
	return o.evidence(unixtime.Of(checkedAt))
}

func (o HeartbeatObservation) evidence(fetchedAt unixtime.Time) state.EvidenceRef {
	var m timeMarks
	detail, times := m.done(o.writeDetail(make([]byte, 0, 128), &m))
	ev := state.EvidenceRef{Kind: state.EvidenceToolResult, Detail: detail, FetchedAt: fetchedAt, Times: times}
	if o.File != "" {
		ev.Kind, ev.Path = state.EvidenceFile, o.File
	}
	return ev
}

// Detail is the Evidence detail line.
func (o HeartbeatObservation) Detail() string { return string(o.appendDetail(make([]byte, 0, 128))) }

// appendDetail appends the detail line to b.
func (o HeartbeatObservation) appendDetail(b []byte) []byte { return o.writeDetail(b, nil) }

// writeDetail appends the detail line to b, marking in m (when not nil)
// the moments it names: the heartbeat, and a claim from the future.
func (o HeartbeatObservation) writeDetail(b []byte, m *timeMarks) []byte {
	switch o.Source {
	case HeartbeatNone:
		b = append(b, "heartbeat age unknown"...)
		if o.FileErr != nil {
			b = append(b, " ("...)
			b = append(b, o.FileErr.Error()...)
			b = append(b, ')')
		}
		return b
	case HeartbeatFromStart:
		b = append(b, "no heartbeat yet; started "...)
		b = m.stamp(b, o.At)
		if o.FileMissing {
			b = append(b, " (no heartbeat file "...)
			b = append(b, o.File...)
			b = append(b, ')')
		}
	default:
		b = append(b, "last heartbeat "...)
		b = m.stamp(b, o.At)
		b = append(b, " ("...)
		b = append(b, o.Source.String()...)
		if o.Source == HeartbeatFile {
			b = append(b, ' ')
			b = append(b, o.File...)
		}
		b = append(b, ')')
	}
	if o.Skew > 0 {
		b = append(b, "; claimed time "...)
		b = m.unix(b, o.Claimed)
		b = append(b, " is in the future, clamped"...)
	}
	if o.Progress != "" {
		b = append(b, "; progress: "...)
		b = append(b, o.Progress...)
	}
	return b
}

// appendStamp writes t as a stored message does (state.StampLayout).
func appendStamp(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, state.StampLayout)
}
