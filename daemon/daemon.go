// Package daemon runs the watchdog service: it opens the store, serves the
// HTTP API and metrics, schedules the jobs, and talks to systemd.
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
	// Reload delivers SIGHUP; an invalid file keeps the running config.
	Reload <-chan os.Signal
	// Level, when set, is Log's level, which a reload changes.
	Level *zap.AtomicLevel
	// WebConfigFile, when set, overrides web.config_file, at start and reload.
	WebConfigFile string
}

// Run runs the daemon until ctx is cancelled (SIGTERM/SIGINT), then shuts
// down: STOPPING, no more HTTP, the running job let finish, the store
// closed. It returns nil on a clean shutdown.
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
	// Checked before anything is opened.
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
	// Once quiet, the view repacks its records (ADR-0061).
	defer releaser.onQuiet(view.Compact)()
	// The fleet exists before anything asks whether this daemon leads.
	fl := &fleet{self: host.HostID(), log: log.Named("leader"), poke: make(chan struct{}, 1)}
	fl.elector = newElector(st, host.HostID(), fl.log, func() { view.Kick(); fl.say() })
	// The view holds only what this daemon owns (ADR-0056),
	view.SetHosts(fl.Hosts)
	// and no ended entity past the failure window (ADR-0060).
	view.EvictAgedOut()
	changes, pushPoke, stopTee := followCommits(st, fl)
	defer stopTee()
	m, pushMetrics, err := newMetrics(reg, view, o.Version, fl)
	if err != nil {
		return err
	}
	writer, rp := newReaper(cfg, st, host, m, fl, log)
	// The monitor stops before the view and the store.
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

	d.recordSettings(ctx, o.ConfigPath)
	// From before the first sweep to after the last job.
	defer d.runFleet(ctx)()
	// From before the first request to after the last job: /readyz reads it.
	defer d.runStoreWatch(ctx)()

	web, err := d.serveHTTP(host, writer, m.Gatherer(reg), fds, token, tokenPath)
	if err != nil {
		return err
	}
	// Jobs outlive the shutdown signal: a running job is let finish.
	jobCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()
	if err := d.schedule(jobCtx); err != nil {
		web.close()
		return err
	}
	// READY only once a first sweep worked through the store (ADR-0006).
	started := d.awaitFirstSweep(ctx)
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

// loop is the daemon's main loop from READY until ctx ends or a server
// fails.
func (d *daemon) loop(ctx, jobCtx context.Context, serveErr <-chan error, o Options) error {
	// The watchdog is fed from this loop, so a wedged loop stops the pings;
	// feedWatchdog adds a writable store and no stuck job (ADR-0015).
	ping := deadline.Shared().Signal()
	defer ping.Stop()
	if d.notify.interval > 0 {
		ping.Set(d.notify.interval / 4)
	}
	// STATUS= follows the view's changes, or statusSlow without any.
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

// shutdown is the end of Run: STOPPING, no more HTTP, the job let finish.
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
	// Give up on a stuck job before systemd kills us without a word; every
	// write is one transaction, so the store stays consistent.
	if !d.sched.StopWithin(shutdownJobWait) {
		d.log.Error("a job is still running; stopping without it", zap.Duration("waited", shutdownJobWait))
	}
	d.log.Info("stopped")
}

// newMetrics registers the daemon's collectors in reg.
func newMetrics(reg *prometheus.Registry, view *live.View, version string, fl *fleet) (*metrics.Metrics, *alertpush.Metrics, error) {
	m, err := metrics.New(reg, view, version, time.Now, metrics.Options{Owns: fl.Owns, Leader: fl.Leader})
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
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

// newReaper is this daemon's write path and the reaper over it.
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

// How long shutdown and reload wait for a running job; shutdown stays under
// the unit's TimeoutStopSec (60s) so that the log says why.
var (
	shutdownJobWait = 45 * time.Second
	reloadJobWait   = 30 * time.Second
)

type daemon struct {
	cfg *config.Config
	// requireHB is require_heartbeat (canonical types), swapped by reload.
	requireHB atomic.Pointer[[]string]
	// tokens are re-read on reload; adminPath is where the admin token was read.
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
	// statusAlarm is the next STATUS= refresh, armed under NOTIFY_SOCKET.
	statusAlarm *deadline.Alarm
	statusOn    bool
	// pushPoke is told on each commit (nil: the pusher polls each second).
	pushPoke chan struct{}

	mu sync.Mutex
	// push is the running Alertmanager pusher (nil: none).
	push *pushing
	// lastStatus is the STATUS= line last sent; status its memory.
	lastStatus string
	status     statusMemory
	lastSweep  time.Time
	sweepGap   time.Duration
	// sweepStart is when the running sweep started (zero: none runs).
	sweepStart time.Time
	// sweepErr is the last sweep's error; swept (READY waits for it) is set by the first that worked.
	sweepErr error
	swept    bool
	// storeErr is the store watch's last finding (nil: writable).
	storeErr     error
	storeChecked time.Time
	lostLogged   bool
	// checking is closed when the running store check ends (nil: none runs): checks never double.
	checking   chan struct{}
	checkStart time.Time
	// storeAlarm is the store watch's next check; watchCtx outlives requests.
	storeAlarm *deadline.Alarm
	watchCtx   context.Context
	// fdErr is the last fd headroom finding (nil: enough); /readyz reads it.
	fdErr error
	// skipped counts background runs skipped while paused.
	skipped atomic.Int64
	// named: this daemon's hostname was recorded (MarkDaemonStart).
	named atomic.Bool
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
