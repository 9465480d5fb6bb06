package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
	"watchdog/store/sqlite"
	"watchdog/wire"
)

// judgedBy is who judged what a command read straight from a database
// shows, and when: a store keeps the last judgement of each entity, and
// without a daemon nothing judges them again, so a process killed since
// still reads "Running · Alive". status and attention print it on stderr
// when no daemon serves the database, and --json carries it as "judge"
// beside the list's or the queue's fields (both are objects; through
// --server there is none: the daemon is the judge).
type judgedBy struct {
	// DaemonServing says whether a watchdog daemon serves the database
	// now (daemonServing).
	DaemonServing bool `json:"daemon_serving"`
	// LastJudgedAt is the last time a daemon recorded its presence in
	// the database (null: no daemon ever did), and LastJudgedBy its host.
	LastJudgedAt *unixtime.Time `json:"last_judged_at"`
	LastJudgedBy string         `json:"last_judged_by,omitempty"`
	// Config is the daemon config the command judged with ("": none was
	// found, the defaults).
	Config string `json:"config"`
}

// localEntityList is `status --json` from a database: the list as
// GET /api/v1/entities shapes it, plus the judge.
type localEntityList struct {
	wire.EntityList
	Judge judgedBy `json:"judge"`
}

// localQueue is `attention --json` from a database: the body of
// GET /api/attention, plus the judge.
type localQueue struct {
	attention.Queue
	Judge judgedBy `json:"judge"`
}

// judgeOf reads who judges the store st (opened at db) now.
//
// Whether a daemon serves it: on an SQLite file, whether any daemon holds
// its lock (sqlite.DaemonLockHeld), which the kernel drops the moment the
// daemon dies; where that cannot be told (PostgreSQL, no /proc/locks),
// whether a daemon recorded its presence within the config's
// thresholds.host_disconnected_after, the silence after which the fleet's
// leader itself calls a host disconnected.
//
// When it last judged: the newest presence record. A daemon marks its
// presence every few seconds from before its first sweep to its stop,
// while it watches every death and runs every timed judgement, so that
// is the last moment its view was current. The newest observation would
// not do: a daemon records one only when something changed, and a quiet
// host's newest can be days old while the daemon judged it all along.
func judgeOf(ctx context.Context, st store.Backend, db string, set settings, now time.Time) (judgedBy, error) {
	j := judgedBy{Config: set.path}
	seen, err := st.DaemonsSeen(ctx)
	if err != nil {
		return j, fmt.Errorf("read the daemons' presence: %w", err)
	}
	var last time.Time
	for host, at := range seen {
		if at.After(last) || (at.Equal(last) && host < j.LastJudgedBy) {
			last, j.LastJudgedBy = at, host
		}
	}
	if !last.IsZero() {
		t := unixtime.Of(last)
		j.LastJudgedAt = &t
	}
	if held, known := sqlite.DaemonLockHeld(db); known {
		j.DaemonServing = held
	} else {
		j.DaemonServing = !last.IsZero() && now.Sub(last) < time.Duration(set.cfg.Thresholds.HostDisconnectedAfter)
	}
	return j, nil
}

// warning is the one line status and attention print on stderr when no
// daemon serves the database ("" when one does).
func (j judgedBy) warning(now time.Time) string {
	if j.DaemonServing {
		return ""
	}
	if j.LastJudgedAt == nil {
		return "watchdog: no watchdog daemon is serving this database; no daemon ever judged it: what it shows is what its writers recorded\n"
	}
	age := "just now"
	if d := now.Sub(j.LastJudgedAt.Time); d >= time.Second {
		age = state.FormatAge(d) + " ago"
	}
	return fmt.Sprintf("watchdog: no watchdog daemon is serving this database; last judged %s (daemon of host %s, %s)\n",
		age, j.LastJudgedBy, state.Stamp(j.LastJudgedAt.Time))
}

// warn prints the note of set (no config found) and the judge's warning
// on w.
func (j judgedBy) warn(w io.Writer, set settings) {
	set.printNote(w)
	if line := j.warning(time.Now()); line != "" {
		_, _ = io.WriteString(w, line)
	}
}
