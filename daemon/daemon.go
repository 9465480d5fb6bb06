// Package daemon runs the watchdog service: it opens the store, serves the
// HTTP API and metrics, schedules the jobs, and talks to systemd (READY
// after the first sweep, WATCHDOG pings from a healthy daemon loop, STATUS
// counts, STOPPING on shutdown).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"watchdog/alertpush"
	"watchdog/api"
	"watchdog/config"
	"watchdog/internal/cronspec"
	"watchdog/internal/deadline"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/page"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/store/postgres" // also registers store.driver: postgres
	"watchdog/store/sqlite"   // also registers store.driver: sqlite
	"watchdog/tokenfile"
	"watchdog/transitions"
	"watchdog/wire"
)

// Options are what `watchdog serve` hands the daemon.
type Options struct {
	Config *config.Config
	// ConfigPath is re-read on reload ("" = defaults only).
	ConfigPath string
	Log        *zap.Logger
	Version    string
	// Reload delivers SIGHUP: re-read the config, apply thresholds and
	// schedules; an invalid file keeps the running config.
	Reload <-chan os.Signal
	// Level, when set, is Log's level, which a reload changes to the new
	// log.level.
	Level *zap.AtomicLevel
	// WebConfigFile, when set (serve --web.config.file, absolute),
	// overrides web.config_file, at start and at each reload.
	WebConfigFile string
}

// Run runs the daemon until ctx is cancelled (SIGTERM/SIGINT), then shuts
// down in order: STOPPING, stop accepting HTTP, let the running job finish,
// close the store. It returns nil on a clean shutdown.
func Run(ctx context.Context, o Options) error {
	cfg := o.Config
	if o.WebConfigFile != "" {
		cfg.Web.ConfigFile = o.WebConfigFile
	}
	log := o.Log
	if !paceMemory() {
		log.Info("GOGC or GOMEMLIMIT set: the collector's pacing is the operator's, no soft memory limit, quiet release or repacking of the daemon's own")
	}
	host := probe.NewHost()
	if cfg.HostID != "" {
		host.HostIDOverride = cfg.HostID
	}
	// A configured token file and the store's directory are checked
	// before anything is opened; the daemon's own token is made beside the
	// database once that exists.
	tf, err := checkHost(cfg)
	if err != nil {
		return err
	}
	if err := config.CheckListen(cfg.Listen, cfg.Auth.None()); err != nil {
		return err
	}
	if tf.Loose() {
		log.Warn("auth.token_file is readable by group or others; chmod 600 it", zap.String("path", tf.Path))
	}
	token := tf.Token
	// Where the token is read from, for the page's token form to name.
	tokenPath := tf.Path

	// One daemon per database and host: a second one would sweep and
	// enforce the same entities in turn, while daemons of other hosts
	// share the store as a fleet (docs/fleet.md). Taken before the store
	// opens, so a refused daemon does not even migrate. A PostgreSQL store
	// has no file to lock: there the fleet's lease (leader) and each
	// daemon's host scoping keep daemons apart.
	if cfg.Store.Driver != store.DriverPostgres {
		lock, err := sqlite.LockDaemonHost(cfg.Store.DSN, host.HostID())
		if err != nil {
			return err
		}
		defer lock.Release() //nolint:errcheck // the kernel drops it at exit anyway
	}

	// Every row the store writes carries the columns the fleet-wide reads
	// order by, derived as the view derives them (ADR-0058).
	store.SetDerivation(live.Columns)
	st, err := store.Open(ctx, cfg.Store.Driver, cfg.Store.DSN)
	if err != nil {
		return err
	}
	defer st.Close()
	if pg, ok := st.(*postgres.Store); ok {
		// What the file lock is on SQLite: one daemon per host on a shared
		// server, held by a session lock for as long as this daemon runs
		// (two daemons of one host would probe, enforce and signal the
		// same processes twice; a rolling deploy must stop the old one
		// first).
		release, err := holdHost(ctx, pg, host.HostID())
		if err != nil {
			return err
		}
		defer release()
	}
	checkStart := time.Now()
	if err := st.QuickCheck(ctx); err != nil {
		return err
	}
	log.Info("store checked", zap.String("db", st.Path()), zap.Duration("took", time.Since(checkStart)))
	if !cfg.Auth.None() && token == "" {
		if token, err = ownToken(cfg.Store.DSN, log); err != nil {
			return err
		}
		tokenPath = tokenfile.BesideDatabase(cfg.Store.DSN)
	}

	reg := prometheus.NewRegistry()
	view := live.New(st, time.Now, time.Duration(cfg.Thresholds.FailureWindow))
	// Once quiet, the view repacks the records a burst scattered
	// (ADR-0061) before the heap is given back.
	defer releaser.onQuiet(view.Compact)()
	// This daemon's place in the fleet exists before anything asks whether
	// it leads or what it owns: the gauges (each daemon counts what it
	// owns, so sum() across a fleet is the fleet), the reaper and the
	// monitor's steps (lv.run), the pusher.
	fl := &fleet{self: host.HostID(), log: log.Named("leader"), poke: make(chan struct{}, 1)}
	fl.elector = newElector(st, host.HostID(), fl.log, func() { view.Kick(); fl.say() })
	// The view holds what this daemon owns; reads of other hosts go to
	// the store (ADR-0056).
	view.SetHosts(fl.Hosts)
	// Nor does it keep the ended entities that aged out of the failure
	// window: what reads them reads the store (ADR-0060).
	view.EvictAgedOut()
	// The store's commit events feed the view, the pusher (a snooze or a
	// dismissal changes the queue without an entity change) and, on
	// SQLite, the fleet: a daemon alone with its file looks at the lock
	// table on them.
	changes, pushPoke := changesOf(st), make(chan struct{}, 1)
	if changes != nil {
		if dsn := cfg.Store.DSN; cfg.Store.Driver != store.DriverPostgres {
			if _, err := sqlite.ReadDaemonLocks(dsn); err == nil {
				fl.locks = func() (sqlite.DaemonLocks, error) { return sqlite.ReadDaemonLocks(dsn) }
			}
		}
		var stopTee func()
		changes, stopTee = tee(changes, fl.poke, pushPoke)
		defer stopTee()
	} else {
		pushPoke = nil
	}
	m, err := metrics.New(reg, view, o.Version, time.Now, metrics.Options{Owns: fl.Owns, Leader: fl.Leader})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	// What the view holds is what this daemon's memory and feed work
	// follow (ADR-0056): its own host's entities, and while it leads the
	// host-less and the silent hosts'.
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "watchdog_view_entities",
		Help: "The entities this daemon's live view holds: its own host's; while it leads, also the host-less ones and those of hosts with no daemon alive."},
		func() float64 { return float64(view.Len()) })); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	pushMetrics, err := alertpush.NewMetrics(reg)
	if err != nil {
		return err
	}
	writer := &transitions.Writer{Store: st, Now: time.Now, Observer: m, Ident: host, Contracts: reaper.Contracts{Host: host},
		PIDs: reaper.PIDGuard{Host: host, Daemon: os.Getpid()}}
	hostname, _ := os.Hostname()
	rp := &reaper.Reaper{
		Store: st, Writer: writer, Prober: host, HostID: host.HostID(), Hostname: hostname,
		Settings: ReaperSettings(cfg), Log: log.Named("reaper"), Observer: m,
	}
	rp.Leads = fl.Leader
	// The monitor hears of every entity the view loads (adoption: a pidfd
	// for each open local process) and of every later change, whoever
	// wrote it; it stops before the view and the store.
	// The fd limit is shared once, here: the daemon's own files, the
	// listener's connections, the watcher's pidfds (ADR-0037).
	var fds fdBudget
	if limit, err := nofile(); err != nil {
		log.Warn("cannot read the fd limit: pidfds and connections are not capped by it", zap.Error(err))
	} else {
		fds = budgetFor(limit, cfg.HTTP.MaxConnections+connReserve)
	}
	lv := newLiveness(view, rp, host, st, m, rp.Settings, fds, cfg.ProcessTree, log.Named("monitor"))
	defer runView(ctx, view, changes, m, log)()
	defer lv.run(log)()
	d := &daemon{cfg: cfg, st: st, rp: rp, log: log, notify: newNotifier(log), metrics: m, view: view, live: lv, fleet: fl, pushMetrics: pushMetrics, pushPoke: pushPoke,
		statusAlarm: deadline.Shared().Signal(), statusOn: os.Getenv("NOTIFY_SOCKET") != ""}
	view.OnChange(func(prev, cur *store.Entity) {
		d.kickPush(prev, cur)
		d.statusSoon()
	})
	defer d.stopPush()

	// The settings its judgement uses, where the commands on the same
	// database find them.
	d.recordSettings(ctx, o.ConfigPath)
	// Leadership and presence run from before the first sweep (which
	// then already knows whether it judges host-less work) to after the
	// last job; stopping hands the lease over.
	defer d.runFleet(ctx)()

	// The store watch runs from before the first request to after the
	// last job: /readyz asks it (askStore) and reads what it found.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	d.watchCtx = watchCtx
	d.storeAlarm = deadline.Shared().Signal()
	d.checkStore(ctx)
	var watching sync.WaitGroup
	watching.Go(func() { d.watchStore(watchCtx) })
	defer func() {
		stopWatch()
		d.storeAlarm.Stop()
		watching.Wait()
	}()

	d.level = o.Level
	// Every read shows the heartbeat the judgement takes: this host's
	// heartbeat files are read at the request, never stored per sweep.
	d.requireHB.Store(&rp.Settings.Probe.RequireHeartbeat)
	beats := &wire.Heartbeats{HostID: host.HostID(), Last: reaper.LastHeartbeat, Required: func(typ string) bool {
		return slices.Contains(*d.requireHB.Load(), typ)
	}}
	// And an open entity's process facts, read from /proc at the request
	// from the tree the monitor keeps (ADR-0048), never on a timer.
	facts := probe.NewFacts(host)
	procs := &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(facts, lv.tree), Leftovers: reaper.ReadLeftovers(facts)}
	d.page = page.New(page.Options{View: view, Store: st, Auth: token != "", TokenFile: tokenPath, Now: time.Now, Log: log.Named("page"), Heartbeats: beats, Processes: procs,
		RunbookURL: cfg.Alertmanager.RunbookURL})
	var tokens *api.Tokens
	if !cfg.Auth.None() {
		ts, err := readTokens(cfg.Auth, token)
		if err != nil {
			return err
		}
		tokens = api.NewTokens(ts)
	}
	d.tokens, d.adminToken, d.adminPath = tokens, token, tokenPath
	d.api = api.New(api.Options{
		Store: st, Writer: writer, Log: log.Named("api"), Tokens: tokens, PublicReads: cfg.Auth.PublicReads, Login: http.HandlerFunc(page.Login), AllowedHosts: cfg.AllowedHosts, Gatherer: m.Gatherer(reg),
		Ready: d.ready, Now: time.Now, FailureWindow: time.Duration(cfg.Thresholds.FailureWindow), Metrics: m, View: view,
		Page: d.page, Heartbeats: beats, Processes: procs, RunbookURL: cfg.Alertmanager.RunbookURL,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	// Bounded so that the probes answer whatever else comes: slow,
	// idle or too many clients (ADR-0034).
	maxConns := httpMax(cfg.HTTP.MaxConnections, fds)
	if maxConns < cfg.HTTP.MaxConnections {
		log.Warn("the fd limit leaves fewer connections than http.max_connections: the server's cap is lowered to fit; raise LimitNOFILE",
			zap.Int("max_connections", maxConns), zap.Int("max_connections_configured", cfg.HTTP.MaxConnections), zap.Int("capped_at", maxConns), zap.Int("fd_limit", fds.Limit))
	}
	lim := newConnLimiter(maxConns, m.Shed)
	m.Connections(lim.counts)
	// One server for the TCP port, which web.Serve may give TLS and
	// basic auth, and one for the local socket, which neither: its
	// callers are known by the kernel. Both share the limiter.
	srv, sockSrv := lim.server(d.api), lim.server(d.api)
	// net/http's own complaints (a TLS handshake that failed, an accept
	// error) in the daemon's log, not bare on stderr.
	srv.ErrorLog = zap.NewStdLog(log.Named("http"))
	sockSrv.ErrorLog = srv.ErrorLog
	// The page's event streams each hold one of the cap's requests for
	// their life: a quarter of the cap at most, so streams never starve
	// the API (ADR-0051); the shutdown ends them first, as Shutdown
	// would otherwise wait for them.
	d.page.SetStreamCap(max(1, maxConns/4))
	srv.RegisterOnShutdown(d.page.CloseStreams)
	sockSrv.RegisterOnShutdown(d.page.CloseStreams)
	m.Streams(func() metrics.StreamCounts {
		s := d.page.Streams()
		return metrics.StreamCounts{Open: s.Open, Slow: s.Dropped, Refused: s.Refused}
	})
	serveErr := make(chan error, 2)
	go func() { serveErr <- serveTCP(srv, lim.listener(ln), cfg.Web.ConfigFile, log) }()
	closeAll := func() {
		srv.Close()     //nolint:errcheck // failing start-up; the error that matters is returned
		sockSrv.Close() //nolint:errcheck // as above
	}
	if err := serveSocket(cfg, func(ln net.Listener) { go func() { serveErr <- sockSrv.Serve(lim.listener(ln)) }() }, log); err != nil {
		closeAll()
		return err
	}
	scheme := "http"
	if cfg.Web.ConfigFile != "" {
		scheme = "web.config_file"
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("transport", scheme), zap.String("db", st.Path()), zap.Int("max_connections", maxConns), zap.Int("max_connections_configured", cfg.HTTP.MaxConnections),
		zap.String("host_id", host.HostID()), zap.Bool("auth", token != ""), zap.Strings("allowed_hosts", cfg.AllowedHosts), zap.Bool("dry_run", cfg.Reaper.DryRun))

	// Jobs get a context that outlives the shutdown signal: a job running
	// at SIGTERM is let finish, then the store closes.
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	if err := d.schedule(jobCtx); err != nil {
		closeAll()
		return err
	}
	// READY only once the store opened and a first sweep worked through
	// it; until then STATUS= says why not, and a shutdown request ends
	// the wait.
	started := d.awaitFirstSweep(ctx)
	if started {
		d.notify.ready(d.statusLine())
		d.sched.Start()
		d.startPush()
		log.Info("ready", zap.String("status", d.statusLine()))
	}

	// systemd's watchdog is fed from this loop: it answers signals and
	// reloads, so a wedged loop stops the pings, and feedWatchdog adds
	// what else must hold (a writable store, no job stuck). The ping is
	// an alarm on the shared clock (ADR-0055), armed only under systemd
	// with WatchdogSec.
	ping := deadline.Shared().Signal()
	defer ping.Stop()
	if d.notify.interval > 0 {
		ping.Set(d.notify.interval / 4)
	}
	// STATUS= follows the live view, not the sweep: statusEvery after a
	// change of an entity or of the store's finding, and once per
	// statusSlow for what time alone changes (an end leaving the failure
	// window), sent only when the line changed (and only under systemd).
	defer d.statusAlarm.Stop()
	if d.statusOn {
		d.statusAlarm.Set(statusSlow)
	}
	var runErr error
loop:
	for started {
		select {
		case <-ctx.Done():
			break loop
		case <-d.statusAlarm.C:
			d.refreshStatus(false)
			d.statusAlarm.Set(statusSlow)
		case <-ping.C:
			d.feedWatchdog()
			ping.Set(d.notify.interval / 4)
		case err := <-serveErr:
			runErr = fmt.Errorf("http server: %w", err)
			break loop
		case <-o.Reload:
			d.reload(jobCtx, o.ConfigPath, o.WebConfigFile)
		}
	}

	log.Info("stopping")
	d.notify.stopping()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range []*http.Server{srv, sockSrv} {
		if err := s.Shutdown(shutdownCtx); err != nil {
			log.Warn("http shutdown", zap.Error(err))
		}
	}
	// A job stuck past the unit's stop timeout would have systemd kill us
	// without a word: give up on it first, and say so. The store stays
	// consistent (every write is one transaction).
	if !d.sched.StopWithin(shutdownJobWait) {
		log.Error("a job is still running; stopping without it", zap.Duration("waited", shutdownJobWait))
	}
	log.Info("stopped")
	return runErr
}

// How long shutdown and reload wait for a running job. Shutdown stays
// under the unit's TimeoutStopSec (60s) so that the log says why.
var (
	shutdownJobWait = 45 * time.Second
	reloadJobWait   = 30 * time.Second
)

type daemon struct {
	cfg *config.Config
	// requireHB is the config's require_heartbeat (canonical types), read
	// by the entity reads' hang_detection while a reload may swap it.
	requireHB atomic.Pointer[[]string]
	// tokens are the API's, re-read on reload; adminPath is where the
	// admin token was read (auth.token_file or the daemon's own).
	tokens                *api.Tokens
	adminToken, adminPath string
	page                  *page.Handler // told of a reloaded runbook_url
	st                    store.Backend
	rp                    *reaper.Reaper
	log                   *zap.Logger
	notify                *notifier
	metrics               *metrics.Metrics
	view                  *live.View
	live                  *liveness
	sched                 *Scheduler
	table                 []Job
	api                   *api.Handler
	level                 *zap.AtomicLevel
	// fleet is this daemon's place among those sharing the store.
	fleet *fleet
	// pushMetrics outlive the pushers a reload replaces.
	pushMetrics *alertpush.Metrics
	// statusAlarm is the next STATUS= refresh, armed when statusOn
	// (NOTIFY_SOCKET is set).
	statusAlarm *deadline.Alarm
	statusOn    bool
	// pushPoke is told on each commit the store tells (nil: it tells
	// none, and the pusher looks at the queue each second).
	pushPoke chan struct{}

	mu sync.Mutex
	// push is the running Alertmanager pusher (nil: none).
	push *pushing
	// lastStatus is the STATUS= line last sent (refreshStatus); status
	// remembers a failing store's start and the last counts.
	lastStatus string
	status     statusMemory
	lastSweep  time.Time
	sweepGap   time.Duration
	// sweepStart is when the running sweep started (zero: none runs);
	// feedWatchdog stops the pings once one runs for far past its budget.
	sweepStart time.Time
	// sweepErr is the last sweep's error; swept is set by the first sweep
	// that worked through the store (afterSweep), which READY waits for.
	sweepErr error
	swept    bool
	// storeErr is the store watch's last finding (nil: writable), made at
	// storeChecked; lostLogged keeps the loss to one log line.
	storeErr     error
	storeChecked time.Time
	lostLogged   bool
	// checking is closed when the running store check ends (nil: none
	// runs), which began at checkStart: a check is never doubled, and
	// one running for over storeCheckStale is a stuck store.
	checking   chan struct{}
	checkStart time.Time
	// storeAlarm is the store watch's next check on the shared clock;
	// watchCtx outlives requests, for the checks they start.
	storeAlarm *deadline.Alarm
	watchCtx   context.Context
	// fdErr is the store watch's last fd headroom finding (nil: enough
	// free for the store to open its files); /readyz reads it.
	fdErr error
	// skipped counts the background runs (jobs, presence) skipped while
	// paused, told when the store takes writes again.
	skipped atomic.Int64
	// named says this daemon's start recorded its machine's hostname with
	// its presence (store.MarkDaemonStart); until then each presence
	// mark tries again.
	named atomic.Bool
}

// jobTable is the daemon's job table: every job of reaper.JobNames, in that
// order (the sweep first: awaitFirstSweep runs it), with its schedule from
// the config and its body.
func (d *daemon) jobTable() []Job {
	j := d.cfg.Jobs
	return []Job{
		{Name: reaper.JobSweep, Spec: j.Sweep, Run: d.unlessPaused(d.sweep), After: d.afterSweep},
		{Name: reaper.JobEnforceTerminal, Spec: j.EnforceTerminal, Run: d.unlessPaused(d.report(d.rp.EnforceTerminal))},
		{Name: reaper.JobReapPhantoms, Spec: j.ReapPhantoms, Run: d.unlessPaused(d.report(d.rp.ReapPhantoms))},
		{Name: reaper.JobCheckSchedules, Spec: j.CheckSchedules, Run: d.unlessPaused(d.report(d.rp.CheckSchedules))},
		{Name: reaper.JobVacuum, Spec: j.Vacuum, Run: d.unlessPaused(d.leading(d.vacuum))},
	}
}

// schedule builds the job table from the config and a fresh scheduler.
func (d *daemon) schedule(ctx context.Context) error {
	j := d.cfg.Jobs
	d.table = d.jobTable()
	sched, err := NewScheduler(ctx, cronspec.Parser, d.table, d.log.Named("jobs"), d.metrics)
	if err != nil {
		return err
	}
	d.sched = sched
	gap := specInterval(j.Sweep)
	d.mu.Lock()
	d.sweepGap = gap
	d.mu.Unlock()
	return nil
}

func (d *daemon) sweep(ctx context.Context) error {
	d.mu.Lock()
	d.sweepStart = time.Now()
	d.mu.Unlock()
	rep, err := d.rp.Sweep(ctx)
	d.mu.Lock()
	d.sweepStart = time.Time{}
	d.sweepErr = err
	if err == nil {
		d.lastSweep = time.Now()
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	if rep.Written > 0 {
		d.log.Debug("sweep", zap.Int("checked", rep.Checked), zap.Int("written", rep.Written))
	}
	return nil
}

// statusEvery is how soon after a change the main loop refreshes
// systemd's STATUS= from the live view (changes within it share one
// refresh); statusSlow is how often it does with no change.
const (
	statusEvery = 5 * time.Second
	statusSlow  = time.Minute
)

// statusSoon asks for a STATUS= refresh within statusEvery (under
// systemd only).
func (d *daemon) statusSoon() {
	if d.statusOn {
		d.statusAlarm.Earlier(time.Now().Add(statusEvery))
	}
}

// refreshStatus sends STATUS= when the live view's counts changed since
// the last line sent, or always when force (after a sweep, as before the
// live view: a reconcile is worth restating).
func (d *daemon) refreshStatus(force bool) {
	line := d.statusLine()
	d.mu.Lock()
	changed := line != d.lastStatus
	d.lastStatus = line
	d.mu.Unlock()
	if changed || force {
		d.notify.status(line)
	}
}

// afterSweep runs after every sweep that read the store and probed, even
// one out of budget. /readyz still wants a complete sweep. The first one
// also feeds systemd's watchdog before READY, when the daemon's loop does
// not run yet.
func (d *daemon) afterSweep() {
	d.mu.Lock()
	d.swept = true
	d.mu.Unlock()
	d.feedWatchdog()
	d.refreshStatus(true)
}

// monitorWedgedAfter is how long one of the monitor's steps may run before
// the daemon counts as wedged: far past any step's own bounds (an artifact
// check's time limit, kill_grace, the store's busy timeout).
const monitorWedgedAfter = 2 * time.Minute

// sweepWedgedAfter is how long past its budget a sweep may run before the
// daemon counts it stuck and stops feeding systemd's watchdog: a sweep
// checks its budget as it goes and returns soon after it runs out, so one
// still running long after is blocked (a store that never answers, say),
// and a restart is the cure.
const sweepWedgedAfter = time.Minute

// feedWatchdog pings systemd's watchdog (notify.watchdog, which keeps the
// pace) when the daemon is healthy by what it can check cheaply: the
// store watch found the store writable within storeCheckStale (no write
// stuck for longer either: see assessStore), and no sweep has
// run for more than its budget plus sweepWedgedAfter. It does not wait for
// a sweep to finish, so the ping does not depend on jobs.sweep's schedule
// (a minute by default): a slow reconciler is not a dead daemon.
func (d *daemon) feedWatchdog() {
	d.askStore(storeAskFresh, storeAskWait)
	if why := d.unhealthy(time.Now()); why != "" {
		d.log.Debug("not feeding systemd's watchdog", zap.String("why", why))
		return
	}
	d.notify.watchdog()
}

// unhealthy says why the daemon should not tell systemd it is alive, or
// "" when it may.
func (d *daemon) unhealthy(now time.Time) string {
	d.mu.Lock()
	storeErr, checked, checking, started := d.storeErr, d.storeChecked, d.checkStart, d.sweepStart
	d.mu.Unlock()
	budget := d.rp.Settings.SweepBudget
	if budget <= 0 {
		budget = reaper.DefaultSettings.SweepBudget
	}
	switch {
	case storeErr != nil:
		return "the store cannot be written: " + oneLine(storeErr.Error())
	case checked.IsZero() || !checking.IsZero() && now.Sub(checking) > storeCheckStale:
		return "the store watch's check has not finished lately"
	case !started.IsZero() && now.Sub(started) > budget+sweepWedgedAfter:
		return fmt.Sprintf("a sweep has run for %s (budget %s)", now.Sub(started).Round(time.Second), budget)
	case d.live != nil && d.live.mon.Stuck(now) > monitorWedgedAfter:
		return fmt.Sprintf("a monitor step has run for %s: every death and deadline waits behind it", d.live.mon.Stuck(now).Round(time.Second))
	}
	return ""
}

func (d *daemon) report(job func(context.Context) (reaper.Report, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		rep, err := job(ctx)
		for _, a := range rep.Actions {
			if rep.DryRun {
				d.log.Info("dry run: would transition", zap.String("job", rep.Job), zap.String("action", a.String()))
			}
		}
		if rep.Truncated {
			d.log.Warn("run stopped at reaper.max_per_run; the next run continues", zap.String("job", rep.Job), zap.Int("max_per_run", d.rp.Settings.MaxPerRun))
		}
		return err
	}
}

// vacuum drops the dismissals that can hide nothing any more and the
// triage log's rows older than thresholds.triage_retention. d.cfg is read
// here safely: a reload swaps it only while the jobs are stopped.
func (d *daemon) vacuum(ctx context.Context) error {
	now := time.Now()
	n, err := d.st.VacuumDismissals(ctx, now)
	if err != nil {
		return err
	}
	retention := time.Duration(d.cfg.Thresholds.TriageRetention)
	logged, err := d.st.VacuumTriage(ctx, now.Add(-retention))
	if err != nil {
		return err
	}
	d.log.Info("vacuum", zap.Int("dismissals_dropped", n), zap.Int("triage_rows_dropped", logged), zap.Duration("triage_retention", retention))
	return nil
}

// ready is /readyz: the store check passed (its cheap checks, the real
// writes' outcomes, and a write probe only when those cannot tell:
// ADR-0038), made at this request unless one finished within
// storeAskFresh (ADR-0055: no check runs for nobody), with fds enough
// free for the store to open its files (never short because of the pid
// watcher: its cap leaves the reserve), and the last sweep is recent
// (three sweep intervals, at least a minute). It waits at most
// storeAskWait for the check, then answers from the last finding, so it
// answers within that whatever state the disk is in; a check running for
// over storeCheckStale is a stuck store.
func (d *daemon) ready() error {
	d.askStore(storeAskFresh, storeAskWait)
	d.mu.Lock()
	last, gap := d.lastSweep, d.sweepGap
	storeErr, checked, checking, fdErr := d.storeErr, d.storeChecked, d.checkStart, d.fdErr
	d.mu.Unlock()
	switch {
	case storeErr != nil:
		return storeErr
	case fdErr != nil:
		return fdErr
	case checked.IsZero():
		return errors.New("the store has not been checked yet")
	case !checking.IsZero() && time.Since(checking) > storeCheckStale:
		return fmt.Errorf("the store's check has not finished for %s (a hung disk, or another process holding the database's write lock)", time.Since(checking).Round(time.Second))
	}
	limit := max(3*gap, time.Minute)
	if last.IsZero() {
		return errors.New("no sweep has completed yet")
	}
	if age := time.Since(last); age > limit {
		return fmt.Errorf("last sweep %s ago (limit %s)", age.Round(time.Second), limit)
	}
	return nil
}

// reload re-reads the config file. Thresholds, reaper settings, job
// schedules and the alertmanager section take effect; store, listen address, auth, web.config_file and process_tree need a restart
// (said in the log). An invalid file changes nothing.
// recordSettings records in the store the thresholds this daemon judges
// with and the file they came from (path, "" for the defaults), at its
// start and at each reload: `watchdog status`, `attention`, `reap` and
// `probe --entity` on this database judge with them (issue 39). A failed
// write is logged; the commands then fall back to the config they find.
func (d *daemon) recordSettings(ctx context.Context, path string) {
	doc, err := d.cfg.Thresholds.ThresholdsYAML()
	if err == nil {
		if path != "" {
			if abs, aerr := filepath.Abs(path); aerr == nil {
				path = abs
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = d.st.RecordSettings(rctx, d.rp.HostID, store.DaemonSettings{YAML: doc, Source: path, At: time.Now()})
	}
	if err != nil {
		d.log.Warn("recording the settings for the commands on this database; they judge with the config they find", zap.Error(err))
	}
}

func (d *daemon) reload(ctx context.Context, path, webConfig string) {
	d.notify.reloading()
	defer d.notify.ready(d.statusLine())
	next, err := config.Load(path)
	if err != nil {
		d.log.Error("reload refused, keeping the running config", zap.String("config", path), zap.String("error", strings.ReplaceAll(err.Error(), "\n", "; ")))
		return
	}
	if webConfig != "" {
		next.Web.ConfigFile = webConfig
	}
	if next.Store != d.cfg.Store || next.Listen != d.cfg.Listen || next.ListenUnix != d.cfg.ListenUnix || next.Auth.Mode != d.cfg.Auth.Mode ||
		next.Auth.TokenFile != d.cfg.Auth.TokenFile || next.Auth.PublicReads != d.cfg.Auth.PublicReads || !slices.Equal(next.AllowedHosts, d.cfg.AllowedHosts) ||
		next.HostID != d.cfg.HostID || next.Log.Format != d.cfg.Log.Format || next.HTTP != d.cfg.HTTP || next.Web != d.cfg.Web || next.ProcessTree != d.cfg.ProcessTree {
		d.log.Warn("store, listen, listen_unix, allowed_hosts, auth (but its tokens), host_id, log.format, http, web.config_file (not the file's content, read for each connection) and process_tree changes need a restart; applying the rest")
	}
	d.reloadTokens(next.Auth)
	// Running jobs finish before their settings change; one that does not
	// within reloadJobWait (stuck) postpones the reload instead of
	// blocking the main loop, and with it SIGTERM, indefinitely.
	if !d.sched.StopWithin(reloadJobWait) {
		d.sched.Start()
		d.log.Error("reload postponed: a job is still running; keeping the running config (send SIGHUP again once it is done)",
			zap.String("config", path), zap.Duration("waited", reloadJobWait))
		return
	}
	old := d.cfg
	d.cfg = next
	d.cfg.Store, d.cfg.Listen, d.cfg.ListenUnix, d.cfg.HostID, d.cfg.AllowedHosts, d.cfg.HTTP = old.Store, old.Listen, old.ListenUnix, old.HostID, old.AllowedHosts, old.HTTP
	d.cfg.Auth.Mode, d.cfg.Auth.TokenFile, d.cfg.Auth.PublicReads = old.Auth.Mode, old.Auth.TokenFile, old.Auth.PublicReads
	rs := ReaperSettings(d.cfg)
	d.live.setSettings(d.rp, rs)
	d.requireHB.Store(&rs.Probe.RequireHeartbeat)
	if err := d.schedule(ctx); err != nil {
		// Validated by config.Load, so this is not expected; keep running
		// on the old schedule rather than on none.
		d.log.Error("reschedule failed, restoring the old config", zap.Error(err))
		d.cfg = old
		rs := ReaperSettings(old)
		d.live.setSettings(d.rp, rs)
		d.requireHB.Store(&rs.Probe.RequireHeartbeat)
		if err := d.schedule(ctx); err != nil {
			d.log.Error("restore failed", zap.Error(err))
			return
		}
	}
	d.recordSettings(ctx, path)
	d.api.SetFailureWindow(time.Duration(d.cfg.Thresholds.FailureWindow))
	d.page.SetRunbookURL(d.cfg.Alertmanager.RunbookURL)
	d.api.SetRunbookURL(d.cfg.Alertmanager.RunbookURL)
	d.reloadPush()
	if d.level != nil {
		if l, err := zapcore.ParseLevel(d.cfg.Log.Level); err == nil {
			d.level.SetLevel(l)
		}
	}
	d.sched.Start()
	d.log.Info("config reloaded", zap.String("config", path))
}

// Check reports what Run would refuse to start on that the config file
// does not show by itself: an auth.token_file that tokenfile.Read refuses,
// a store whose directory does not exist. It returns every problem, one per
// line; check-config prints them beside the file's own, so that it says ok
// only for a file serve starts with.
func Check(cfg *config.Config) error {
	_, err := checkHost(cfg)
	return err
}

// checkHost is Check, also returning the configured token file as read.
func checkHost(cfg *config.Config) (tokenfile.File, error) {
	f, err := configuredToken(cfg.Auth)
	if cfg.Web.ConfigFile != "" {
		// The toolkit's own check (its YAML, certificates and hashes),
		// before the port opens: a web config that would refuse every
		// connection is a start-up error.
		if werr := web.Validate(cfg.Web.ConfigFile); werr != nil {
			err = errors.Join(err, fmt.Errorf("web.config_file %s: %w", cfg.Web.ConfigFile, werr))
		}
	}
	if cfg.Store.Driver == store.DriverPostgres {
		return f, err // a server, not a file: nothing of it to check here
	}
	return f, errors.Join(err, sqlite.CheckDir(cfg.Store.DSN))
}

// configuredToken reads auth.token_file; the zero File when none is
// configured (the daemon's own token, or auth: none).
func configuredToken(a config.Auth) (tokenfile.File, error) {
	if a.TokenFile == "" || a.None() {
		return tokenfile.File{}, nil
	}
	f, err := tokenfile.Read(a.TokenFile)
	if err != nil {
		return tokenfile.File{}, fmt.Errorf("auth.token_file: %w", err)
	}
	return f, nil
}

// ownToken returns the daemon's own token, in tokenfile.Name beside the
// database, creating it on the first start (writes need a token by default:
// docs/reference/http-api.md, Authentication). The path is logged so an operator knows where to read it;
// the token itself never is.
func ownToken(dsn string, log *zap.Logger) (string, error) {
	path := tokenfile.BesideDatabase(dsn)
	f, created, err := tokenfile.Ensure(path)
	if err != nil {
		return "", fmt.Errorf("the API token (no auth.token_file configured, so it lives beside the database; set auth.token_file, or auth: none on loopback): %w", err)
	}
	if f.Loose() {
		log.Warn("the API token file is readable by group or others; chmod 600 it", zap.String("path", f.Path))
	}
	if created {
		log.Info("created the API token; clients send it as Authorization: Bearer", zap.String("token_file", path))
	}
	return f.Token, nil
}

// oneLine keeps a message on one line (STATUS= and log fields).
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// How the first sweep is retried before READY: from the first delay,
// doubling up to the last.
var (
	firstSweepRetry    = time.Second
	firstSweepRetryMax = 30 * time.Second
)

// awaitFirstSweep runs the first sweep until one works through the store,
// with backoff, saying in STATUS= and the log why READY waits. It returns
// false when ctx ends first (a shutdown before READY).
func (d *daemon) awaitFirstSweep(ctx context.Context) bool {
	wait := firstSweepRetry
	retry := deadline.Shared().Signal()
	defer retry.Stop()
	for {
		d.sched.RunNow(d.table[0])
		d.mu.Lock()
		ok, err := d.swept, d.sweepErr
		d.mu.Unlock()
		if ok {
			return true
		}
		if err == nil && d.paused() {
			d.mu.Lock()
			if d.storeErr != nil {
				err = fmt.Errorf("the store cannot take writes, so the daemon's background writes are paused: %w", d.storeErr)
			}
			d.mu.Unlock()
		}
		if err == nil {
			err = errors.New("it did not finish (see the log)")
		}
		d.notify.status(fmt.Sprintf("starting: the first sweep failed, retrying in %s: %s", wait, oneLine(err.Error())))
		d.log.Warn("first sweep failed; READY waits for one that succeeds", zap.Error(err), zap.Duration("retry_in", wait))
		retry.Set(wait)
		select {
		case <-ctx.Done():
			return false
		case <-retry.C:
		}
		wait = min(2*wait, firstSweepRetryMax)
	}
}

// unlessPaused skips a job while the daemon's background writes are
// paused (paused): the run counts as skipped (watchdog_job_runs_total
// {result="skipped"}), and the store watch's one log line says why.
func (d *daemon) unlessPaused(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if d.paused() {
			d.skipped.Add(1)
			return errSkipped
		}
		return run(ctx)
	}
}

// paused says whether the daemon makes no background writes (its jobs'
// observations and transitions, its presence) now:
//
//   - The store's identity is lost: every write would be refused, and a
//     job failing each second would bury the one error that says what
//     happened. The daemon stays up on purpose (systemd keeps getting its
//     pings): it still holds the lost file open, which is how the data is
//     rescued, and a restart would start on an empty store.
//   - The disk is short of space (the store watch found store.
//     ErrShortOfSpace): until minFreeBytes plus the reserve's margin are
//     free again, every byte an operator frees is left free. The store
//     refuses these writes anyway; pausing keeps them from failing
//     noisily, one a second.
func (d *daemon) paused() bool {
	if d.st != nil && d.st.Lost() {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return errors.Is(d.storeErr, sqlite.ErrShortOfSpace)
}

// The store watch (ADR-0038, ADR-0055): its cheap checks (they write
// nothing: three stat(2), two statfs(2), one faccessat(2) and the fd
// headroom) run when asked (/readyz, systemd's ping: at most once per
// storeAskFresh, the asker waiting at most storeAskWait), at once when
// the store tells of a change to its health, and on one alarm: each
// storeCheckEvery while the store is not ready (so that its recovery is
// seen within about a second), else at storeCheckSlow or when a write
// probe is due, whichever is first. A check with its probe may take
// storeProbeTimeout; one running, or a write running, for over
// storeCheckStale is a stuck store. The write probe runs only while the
// store is not ready, after a write failed, and when no write committed
// for storeProbeIdle: an idle daemon nobody asks checks once per
// storeCheckSlow and writes at most one probe per storeProbeIdle.
var (
	storeCheckEvery   = time.Second
	storeCheckSlow    = time.Minute
	storeAskFresh     = 250 * time.Millisecond
	storeAskWait      = 500 * time.Millisecond
	storeProbeTimeout = 1500 * time.Millisecond
	storeCheckStale   = 3 * time.Second
	storeProbeIdle    = 5 * time.Minute
)

// watchStore runs the store check on the store's health events and on
// its alarm, until ctx ends.
func (d *daemon) watchStore(ctx context.Context) {
	events := d.st.HealthEvents()
	for {
		select {
		case <-ctx.Done():
			return
		case <-events:
		case <-d.storeAlarm.C:
		}
		<-d.startCheck()
	}
}

// askStore makes sure a store check finished within fresh: it starts one
// (or joins the one running) and waits for it at most wait. A daemon
// with no store watch (a test's) asks nothing.
func (d *daemon) askStore(fresh, wait time.Duration) {
	if d.st == nil || d.storeAlarm == nil {
		return
	}
	d.mu.Lock()
	recent := !d.storeChecked.IsZero() && time.Since(d.storeChecked) < fresh
	d.mu.Unlock()
	if recent {
		return
	}
	done := d.startCheck()
	a := deadline.Shared().Signal()
	a.Set(wait)
	defer a.Stop()
	select {
	case <-done:
	case <-a.C:
	}
}

// startCheck starts a store check on a goroutine of its own, or returns
// the running one's: done is closed when it ends.
func (d *daemon) startCheck() (done <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checking != nil {
		return d.checking
	}
	ch := make(chan struct{})
	d.checking, d.checkStart = ch, time.Now()
	go func() {
		d.checkStore(d.watchCtx)
		d.mu.Lock()
		d.checking, d.checkStart = nil, time.Time{}
		d.mu.Unlock()
		close(ch)
	}()
	return ch
}

// scheduleCheck sets the store watch's alarm after a check that found
// err: within storeCheckEvery while not ready, else at storeCheckSlow or
// when the write probe falls due (storeProbeIdle after the last committed
// write), whichever is first.
func (d *daemon) scheduleCheck(err error) {
	if d.storeAlarm == nil {
		return
	}
	if err != nil {
		d.storeAlarm.Set(storeCheckEvery)
		return
	}
	next := time.Now().Add(storeCheckSlow)
	if w := d.st.WriteHealth(); !w.LastOK.IsZero() {
		// A second past the due time: the check then finds it due.
		if due := w.LastOK.Add(storeProbeIdle + time.Second); due.Before(next) {
			next = due
		}
	}
	d.storeAlarm.SetAt(next)
}

// assessStore says whether the store takes writes, writing only when what
// it sees cannot tell: the cheap checks (Check) first; then what the real
// writes showed (one running for over storeCheckStale, or the last one
// failing for the store's sake); then a write probe, but only when the
// store was not ready (so that its recovery is seen), a write failed, or
// none committed for storeProbeIdle.
func (d *daemon) assessStore(ctx context.Context, notReady bool) error {
	cctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	defer cancel()
	if err := d.st.Check(cctx); err != nil {
		return err
	}
	w, now := d.st.WriteHealth(), time.Now()
	switch {
	case !w.Stalled.IsZero() && now.Sub(w.Stalled) > storeCheckStale:
		return fmt.Errorf("a write to the store has not finished for %s (a hung disk, or another process holding the database's write lock)",
			now.Sub(w.Stalled).Round(time.Second))
	case notReady || w.Failed != nil || now.Sub(w.LastOK) > storeProbeIdle:
		return d.st.CheckWrite(cctx)
	}
	return nil
}

// checkStore assesses the store once and records the finding for /readyz
// and STATUS=. It logs changes only: a loss once (with the rescue), a
// failing file system when it starts failing and when it recovers.
func (d *daemon) checkStore(ctx context.Context) {
	d.mu.Lock()
	prevErr := d.storeErr
	notReady := prevErr != nil || d.storeChecked.IsZero()
	d.mu.Unlock()
	err := d.assessStore(ctx, notReady)
	if ctx.Err() != nil {
		return // shutting down: not the store's fault
	}
	d.status.storeChecked(err, time.Now())
	fdErr := checkHeadroom(fdHeadroom)
	d.scheduleCheck(errors.Join(err, fdErr))
	if (err == nil) != (prevErr == nil) {
		d.statusSoon()
	}
	d.mu.Lock()
	prev, prevFD := d.storeErr, d.fdErr
	d.storeErr, d.storeChecked, d.fdErr = err, time.Now(), fdErr
	reportLoss := d.st.Lost() && !d.lostLogged
	if reportLoss {
		d.lostLogged = true
	}
	d.mu.Unlock()
	switch {
	case fdErr != nil && prevFD == nil:
		d.log.Error("not ready: the store cannot open its files", zap.Error(fdErr))
	case fdErr == nil && prevFD != nil:
		d.log.Info("file descriptors free again: ready as far as they go", zap.NamedError("was", prevFD))
	}
	switch {
	case reportLoss:
		d.reportLost(ctx, err)
	case err != nil && prev == nil && !d.st.Lost() && errors.Is(err, sqlite.ErrShortOfSpace):
		d.log.Error("store cannot take writes: the disk is short of space; not ready, writes answered 503, and the daemon's own background writes (jobs, presence) are paused until the reserve is free again; watchdog recovers by itself",
			zap.String("db", d.st.Path()), zap.Error(err))
	case err != nil && prev == nil && !d.st.Lost():
		d.log.Error("store cannot take writes: not ready, writes answered 503; watchdog recovers by itself once the cause clears",
			zap.String("db", d.st.Path()), zap.Error(err))
	case err == nil && prev != nil:
		d.log.Info("store takes writes again", zap.String("db", d.st.Path()), zap.NamedError("was", prev),
			zap.Int64("background_runs_skipped", d.skipped.Swap(0)))
	}
}

// lostMessage is the one log line of a lost store (details in its
// fields).
const lostMessage = "store lost: its database file was deleted or replaced while watchdog ran; writes are refused until a restart"

// rescueTimeout bounds the copy of a lost store.
const rescueTimeout = 5 * time.Minute

// reportLost rescues what the lost store held and logs the one error that
// says what happened and what to do.
func (d *daemon) reportLost(ctx context.Context, lost error) {
	db := sqlite.FilePath(d.st.Path())
	rctx, cancel := context.WithTimeout(ctx, rescueTimeout)
	defer cancel()
	copyPath, rerr := "", error(errors.New("this store keeps no copy"))
	if r, ok := d.st.(store.Rescuer); ok {
		copyPath, rerr = r.Rescue(rctx, time.Now())
	}
	var todo string
	if rerr == nil {
		todo = fmt.Sprintf("writes are refused (503) and /readyz is 503 until watchdog restarts. "+
			"The data as this daemon last saw it was copied to %s. To keep it: stop watchdog, move that copy to %s (replacing what is there, and removing any %s-wal and %s-shm), start watchdog. "+
			"To use the file now at %s instead, restart watchdog; a restart with no file there starts an empty store", copyPath, db, db, db, db)
	} else {
		todo = fmt.Sprintf("writes are refused (503) and /readyz is 503 until watchdog restarts. No copy could be saved (%s). "+
			"Before stopping watchdog, copy the deleted files back from its open descriptors (ls -l /proc/%d/fd | grep %s), or restore %s from a backup; then restart watchdog",
			oneLine(rerr.Error()), os.Getpid(), filepath.Base(db), db)
	}
	d.log.Error(lostMessage, zap.String("db", db), zap.String("error", oneLine(lost.Error())),
		zap.String("rescued_to", copyPath), zap.String("what_to_do", todo))
}
