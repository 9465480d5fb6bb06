// Package daemon runs the watchdog service: it opens the store, serves the
// HTTP API and metrics, schedules the jobs, and talks to systemd (READY
// after the first sweep, WATCHDOG pings from a healthy daemon loop, STATUS
// counts, STOPPING on shutdown).
package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"watchdog/alertpush"
	"watchdog/api"
	"watchdog/config"
	"watchdog/internal/deadline"
	"watchdog/live"
	"watchdog/metrics"
	"watchdog/page"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/store"
	"watchdog/tokenfile"
	"watchdog/transitions"
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

	st, closeStore, err := openStore(ctx, cfg, host.HostID(), log)
	if err != nil {
		return err
	}
	defer closeStore()
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
	changes, pushPoke, stopTee := followCommits(st, fl)
	defer stopTee()
	m, pushMetrics, err := newMetrics(reg, view, o.Version, fl)
	if err != nil {
		return err
	}
	writer, rp := newReaper(cfg, st, host, m, fl, log)
	// The monitor hears of every entity the view loads (adoption: a pidfd
	// for each open local process) and of every later change, whoever
	// wrote it; it stops before the view and the store.
	fds := fdBudgetOf(cfg.HTTP.MaxConnections, log)
	lv := newLiveness(view, rp, host, st, m, rp.Settings, fds, cfg.ProcessTree, log.Named("monitor"))
	defer runView(ctx, view, changes, m, log)()
	defer lv.run(log)()
	d := &daemon{cfg: cfg, st: st, rp: rp, log: log, notify: newNotifier(log), metrics: m, view: view, live: lv, fleet: fl, pushMetrics: pushMetrics, pushPoke: pushPoke,
		statusAlarm: deadline.Shared().Signal(), statusOn: os.Getenv("NOTIFY_SOCKET") != "", level: o.Level}
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
	defer d.runStoreWatch(ctx)()

	web, err := d.serveHTTP(host, writer, m.Gatherer(reg), fds, token, tokenPath)
	if err != nil {
		return err
	}
	// Jobs get a context that outlives the shutdown signal: a job running
	// at SIGTERM is let finish, then the store closes.
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	if err := d.schedule(jobCtx); err != nil {
		web.close()
		return err
	}
	// READY only once the store opened and a first sweep worked through
	// it; until then STATUS= says why not, and a shutdown request ends
	// the wait.
	started := d.awaitFirstSweep(ctx)
	// The view's changes arm STATUS= refreshes (statusSoon) until Run ends.
	defer d.statusAlarm.Stop()
	var runErr error
	if started {
		d.notify.ready(d.statusLine())
		d.sched.Start()
		d.startPush()
		log.Info("ready", zap.String("status", d.statusLine()))
		runErr = d.loop(ctx, jobCtx, web.errs, o)
	}
	d.shutdown(web)
	return runErr
}

// loop is the daemon's main loop, from READY until ctx ends or a server
// fails (its error returned): signals, reloads, STATUS= and systemd's
// watchdog.
func (d *daemon) loop(ctx, jobCtx context.Context, serveErr <-chan error, o Options) error {
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
	if d.statusOn {
		d.statusAlarm.Set(statusSlow)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.statusAlarm.C:
			d.refreshStatus(false)
			d.statusAlarm.Set(statusSlow)
		case <-ping.C:
			d.feedWatchdog()
			ping.Set(d.notify.interval / 4)
		case err := <-serveErr:
			return fmt.Errorf("http server: %w", err)
		case <-o.Reload:
			d.reload(jobCtx, o.ConfigPath, o.WebConfigFile)
		}
	}
}

// shutdown is the end of Run: STOPPING, no more HTTP, and the running
// job let finish within shutdownJobWait.
func (d *daemon) shutdown(web *httpSide) {
	d.log.Info("stopping")
	d.notify.stopping()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range []*http.Server{web.srv, web.sock} {
		if err := s.Shutdown(shutdownCtx); err != nil {
			d.log.Warn("http shutdown", zap.Error(err))
		}
	}
	// A job stuck past the unit's stop timeout would have systemd kill us
	// without a word: give up on it first, and say so. The store stays
	// consistent (every write is one transaction).
	if !d.sched.StopWithin(shutdownJobWait) {
		d.log.Error("a job is still running; stopping without it", zap.Duration("waited", shutdownJobWait))
	}
	d.log.Info("stopped")
}

// newMetrics registers the daemon's collectors in reg: the metrics
// package's, the view's size, the pusher's.
func newMetrics(reg *prometheus.Registry, view *live.View, version string, fl *fleet) (*metrics.Metrics, *alertpush.Metrics, error) {
	m, err := metrics.New(reg, view, version, time.Now, metrics.Options{Owns: fl.Owns, Leader: fl.Leader})
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	// What the view holds is what this daemon's memory and feed work
	// follow (ADR-0056): its own host's entities, and while it leads the
	// host-less and the silent hosts'.
	if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "watchdog_view_entities",
		Help: "The entities this daemon's live view holds: its own host's; while it leads, also the host-less ones and those of hosts with no daemon alive."},
		func() float64 { return float64(view.Len()) })); err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	pushMetrics, err := alertpush.NewMetrics(reg)
	if err != nil {
		return nil, nil, err
	}
	return m, pushMetrics, nil
}

// newReaper is the write path this daemon writes through (the API's too)
// and the reaper over it, judging with the config's settings; it does the
// host-less work only while this daemon leads.
func newReaper(cfg *config.Config, st store.Backend, host *probe.Host, m *metrics.Metrics, fl *fleet, log *zap.Logger) (*transitions.Writer, *reaper.Reaper) {
	writer := &transitions.Writer{Store: st, Now: time.Now, Observer: m, Ident: host, Contracts: reaper.Contracts{Host: host},
		PIDs: reaper.PIDGuard{Host: host, Daemon: os.Getpid()}}
	hostname, _ := os.Hostname()
	rp := &reaper.Reaper{
		Store: st, Writer: writer, Prober: host, HostID: host.HostID(), Hostname: hostname,
		Settings: ReaperSettings(cfg), Log: log.Named("reaper"), Observer: m,
	}
	rp.Leads = fl.Leader
	return writer, rp
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

// oneLine keeps a message on one line (STATUS= and log fields).
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
