package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"watchdog/attention"
	"watchdog/cmd/watchdog/internal/target"
	"watchdog/internal/unixtime"
	"watchdog/state"
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
	// Config is the daemon config the command found ("": none, the
	// defaults).
	Config string `json:"config"`
	// Settings, when the database holds them, are whose recorded
	// thresholds the command judged with instead (issue 39).
	Settings *recordedSettings `json:"settings,omitempty"`
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

// judgeOf reads who judges what t reads now (target.Target's Judged,
// under the config's thresholds.host_disconnected_after), with the config
// set judged with; nil through a daemon, which is the judge.
func judgeOf(ctx context.Context, t target.Target, set settings) (*judgedBy, error) {
	var disconnected time.Duration
	if set.cfg != nil {
		disconnected = time.Duration(set.cfg.Thresholds.HostDisconnectedAfter)
	}
	got, err := t.Judged(ctx, disconnected, time.Now())
	if err != nil || got == nil {
		return nil, err
	}
	j := judgedBy{DaemonServing: got.DaemonServing, LastJudgedBy: got.LastBy, Config: set.path, Settings: set.recorded}
	if !got.LastAt.IsZero() {
		at := unixtime.Of(got.LastAt)
		j.LastJudgedAt = &at
	}
	return &j, nil
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
