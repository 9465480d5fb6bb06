package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"watchdog/cmd/watchdog/internal/target"
	"watchdog/daemon"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

func newStatusCmd() *cobra.Command {
	var db, server, typ, severities, host, cfgPath string
	var asJSON, open, watch, wide bool
	var every time.Duration
	c := &cobra.Command{
		Use:   "status",
		Short: "Table of entities with their display chain, most severe first",
		Long: `Print one row per entity, most severe first: severity, type, id, the
display chain, the latest reason (with how the process ended), its PID,
the host it was recorded on, since when it runs, the age of the heartbeat
it is judged by (its heartbeat file's mtime, read here for this host's
entities, or its posted heartbeat, whichever is later) and of its last
update. --json prints the list as
GET /api/v1/entities shapes it, each entity with its whole history.

It reads a database (--db, WATCHDOG_DB) or, with --server (WATCHDOG_SERVER),
a daemon's API: on a host where the database is not yours to open, and
from any daemon of a fleet, which shows every host's entities. Both print
the same table and the same JSON. --host keeps one host's entities.
--watch redraws the table every --every (2s) until Ctrl-C.

--wide adds what systemctl status shows per process, for each open entity
of the host that reads it: CPU% (the tree's, in percent of one core, since
the previous read of this command, else since the process started), RSS
(the process's), UPTIME, TASKS (the threads of the process and its
descendants) and DESC (its live descendants, "256+" past what one read
reads). From a database the processes are read here, for this host's
entities; through --server the daemon reads its own. --json carries them
as each entity's "process" object.

From a database it reads the one the daemon serves (--db, else WATCHDOG_DB,
else the store.dsn of the daemon's config: --config, else $WATCHDOG_CONFIG,
else ` + defaultConfigPath + ` when it exists; without one it says so in one
line on stderr). The states shown are the last ones judged: when no daemon
serves the database, a line on stderr says so and when one last judged it
("no watchdog daemon is serving this database; last judged 12m ago"), and
--json carries the same facts in "judge". Through --server the daemon
judges: no such line.`,
		Example: `  watchdog status
  watchdog status --open --severity critical,warning
  watchdog status --open --watch
  watchdog status --open --wide
  watchdog status --server http://127.0.0.1:9715 --host web-1
  WATCHDOG_SERVER=http://10.0.0.5:9715 WATCHDOG_TOKEN_FILE=~/.watchdog.token watchdog status --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if typ != "" {
				canon, ok := transitions.CanonicalType(typ)
				if !ok {
					return usageError("--type: unknown entity type %q (known: %s)", typ, strings.Join(transitions.Types(), ", "))
				}
				typ = canon
			}
			want, err := state.ParseSeverities(severities, state.Severities)
			if err != nil {
				return usageError("--severity: %v", err)
			}
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				return err
			}
			f := wire.EntityFilter{Type: typ, Severities: want, Host: host}
			var set settings
			if remote, _ := to.Remote(); !remote {
				// The daemon's settings and, unless --db named one, its database.
				if set, to.DB, err = localSettings(cmd, db); err != nil {
					return err
				}
				to.RequireHeartbeat = daemon.ReaperSettings(set.cfg).Thresholds.RequireHeartbeat
			}
			// read reads the list once, and from a database who judged it.
			read := func(ctx context.Context) (wire.EntityList, *judgedBy, error) {
				out, j, err := readList(ctx, to, f, target.ListOptions{History: asJSON, Process: wide || asJSON}, set)
				if err != nil {
					return out, nil, to.Explain(err)
				}
				if open {
					out.Items = openOnly(out.Items)
				}
				wire.SortEntities(out.Items)
				out.Total, out.Next = len(out.Items), ""
				return out, j, nil
			}
			if watch {
				if asJSON {
					return usageError("--watch redraws the table: it does not take --json")
				}
				if every <= 0 {
					return usageError("--every %s: must be positive", every)
				}
				return watchStatus(cmd, read, to.Where(), set, every, wide)
			}
			out, j, err := read(cmd.Context())
			if err != nil {
				return err
			}
			table := out.Table
			if wide {
				table = out.WideTable
			}
			if j == nil {
				return output(cmd.OutOrStdout(), asJSON, out, table)
			}
			j.warn(cmd.ErrOrStderr(), set)
			return output(cmd.OutOrStdout(), asJSON, localEntityList{EntityList: out, Judge: *j}, table)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&watch, "watch", false, "redraw the table every --every until interrupted (Ctrl-C), like watch(1)")
	fl.DurationVar(&every, "every", 2*time.Second, "how often --watch reads again")
	fl.StringVar(&typ, "type", "", "only this entity type")
	fl.StringVar(&severities, "severity", "", "only these severities, comma separated (critical,warning,info,neutral)")
	fl.StringVar(&host, "host", "", "only the entities recorded on this host: its hostname (the HOST column) or its id (a fleet's daemons share one store; a name several hosts bear is refused, listing their ids)")
	fl.BoolVar(&open, "open", false, "only open entities: not ended (terminal) and not legacy")
	fl.BoolVar(&asJSON, "json", false, "print the entity read shape as JSON, each entity with its audit rows and its process facts")
	fl.BoolVar(&wide, "wide", false, "add the process facts of open entities (CPU%, RSS, UPTIME, TASKS, DESC), read from /proc on their host")
	addReadFlags(c, &db, &server)
	addConfigFlag(c, &cfgPath)
	fl.Lookup("config").Usage += "; not with --server"
	return c
}

// readList reads the list once through a target opened for this read
// alone, so --watch outlives a daemon's restart, and who judged it.
func readList(ctx context.Context, to target.Choice, f wire.EntityFilter, o target.ListOptions, set settings) (wire.EntityList, *judgedBy, error) {
	t, err := to.Open(ctx, false, false)
	if err != nil {
		return wire.EntityList{}, nil, err
	}
	defer t.Close()
	out, err := t.List(ctx, f, o)
	if err != nil {
		return wire.EntityList{}, nil, err
	}
	j, err := judgeOf(ctx, t, set)
	if err != nil {
		return wire.EntityList{}, nil, err
	}
	return out, j, nil
}

// openOnly keeps the open, non-legacy entities, read from the wire shape
// so a daemon's list is filtered by the same rule as a local one.
func openOnly(items []wire.Entity) []wire.Entity {
	out := items[:0]
	for _, e := range items {
		if e.Lifecycle == nil || e.State.Legacy() {
			continue
		}
		if g, err := transitions.Lookup(e.Type); err == nil && g.IsTerminal(*e.Lifecycle) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// watchStatus prints the table every interval until SIGINT or SIGTERM,
// clearing the screen on a terminal as watch(1) does. A failed read is
// shown in its frame and retried: a daemon restarting must not end the
// watch. A database's frames carry status's stderr notes.
func watchStatus(cmd *cobra.Command, read func(context.Context) (wire.EntityList, *judgedBy, error), src string, set settings, every time.Duration, wide bool) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	w := cmd.OutOrStdout()
	tty := isTerminal(w)
	for {
		out, j, err := read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		now := time.Now()
		frame := fmt.Sprintf("every %s · %s · %s\n\n", every, src, now.Format("2006-01-02 15:04:05"))
		if err != nil {
			frame += "watchdog: " + firstLine(err.Error()) + "\n"
		} else {
			if j != nil {
				if warn := set.note() + j.warning(now); warn != "" {
					frame += warn + "\n"
				}
			}
			if wide {
				frame += out.WideTable()
			} else {
				frame += out.Table()
			}
		}
		if tty {
			// The redraw: the one control sequence this command line writes.
			if err := writeRaw(w, "\x1b[H\x1b[2J"); err != nil {
				return err
			}
		} else {
			frame += "\n"
		}
		if _, err := io.WriteString(w, frame); err != nil {
			return err // the reader went away
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// isTerminal reports whether w is a terminal, where a frame may clear the
// screen.
func isTerminal(w io.Writer) bool {
	f, ok := rawWriter(w).(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// rawWriter is the writer under the command line's escaping (ctlesc), or w.
func rawWriter(w io.Writer) io.Writer {
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		return u.Unwrap()
	}
	return w
}

// writeRaw writes s past the escaping.
func writeRaw(w io.Writer, s string) error {
	_, err := io.WriteString(rawWriter(w), s)
	return err
}
