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

// judgedBy is who judged what a command read from a database shows, and
// when: without a daemon nothing judges again. Printed on stderr, and in
// --json as "judge"; none through --server, where the daemon judges.
type judgedBy struct {
	// DaemonServing says whether a watchdog daemon serves the database now.
	DaemonServing bool `json:"daemon_serving"`
	// LastJudgedAt is a daemon's last presence (null: never), LastJudgedBy its host.
	LastJudgedAt *unixtime.Time `json:"last_judged_at"`
	LastJudgedBy string         `json:"last_judged_by,omitempty"`
	// Config is the daemon config the command found ("": the defaults).
	Config string `json:"config"`
	// Settings are whose recorded thresholds the command judged with, if any.
	Settings *recordedSettings `json:"settings,omitempty"`
}

// localEntityList is `status --json` from a database, with the judge.
type localEntityList struct {
	wire.EntityList
	Judge judgedBy `json:"judge"`
}

// localQueue is `attention --json` from a database, with the judge.
type localQueue struct {
	attention.Queue
	Judge judgedBy `json:"judge"`
}

// judgeOf reads who judges what t reads now; nil through a daemon.
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

// warning is the line printed on stderr when no daemon serves the
// database ("" when one does).
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

// warn prints set's note and the judge's warning on w.
func (j judgedBy) warn(w io.Writer, set settings) {
	set.printNote(w)
	if line := j.warning(time.Now()); line != "" {
		_, _ = io.WriteString(w, line)
	}
}
