package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"watchdog/api"
	"watchdog/config"
	"watchdog/metrics"
	"watchdog/page"
	"watchdog/probe"
	"watchdog/reaper"
	"watchdog/transitions"
	"watchdog/wire"
)

// httpSide is the daemon's two running servers (TCP port, local socket)
// and where either tells that it stopped serving.
type httpSide struct {
	srv, sock *http.Server
	errs      <-chan error
}

// close ends both servers: a start-up that failed after they began serving.
func (h *httpSide) close() {
	h.srv.Close()  //nolint:errcheck // failing start-up; the error that matters is returned
	h.sock.Close() //nolint:errcheck // as above
}

// serveHTTP builds the HTTP side (page, API, the shared limiter) and serves
// it on the TCP port and the local socket. token is the admin token ("":
// none), read from tokenPath.
func (d *daemon) serveHTTP(host *probe.Host, writer *transitions.Writer, gatherer prometheus.Gatherer, fds fdBudget, token, tokenPath string) (*httpSide, error) {
	cfg, log, st, view, m := d.cfg, d.log, d.st, d.view, d.metrics
	// Heartbeat files are read at the request, never stored per sweep.
	d.requireHB.Store(&d.rp.Settings.Thresholds.RequireHeartbeat)
	beats := &wire.Heartbeats{HostID: host.HostID(), Last: reaper.LastHeartbeat, Required: func(typ string) bool {
		return slices.Contains(*d.requireHB.Load(), typ)
	}}
	// Process facts too, from the monitor's tree (ADR-0048).
	facts := probe.NewFacts(host)
	procs := &wire.Processes{HostID: host.HostID(), Read: reaper.ReadFacts(facts, d.live.tree), Leftovers: reaper.ReadLeftovers(facts)}
	d.page = page.New(page.Options{View: view, Store: st, Auth: token != "", TokenFile: tokenPath, Now: time.Now, Log: log.Named("page"), Heartbeats: beats, Processes: procs,
		RunbookURL: cfg.Alertmanager.RunbookURL})
	var tokens *api.Tokens
	if !cfg.Auth.None() {
		ts, err := readTokens(cfg.Auth, token)
		if err != nil {
			return nil, err
		}
		tokens = api.NewTokens(ts)
	}
	d.tokens, d.adminToken, d.adminPath = tokens, token, tokenPath
	d.api = api.New(api.Options{
		Store: st, Writer: writer, Log: log.Named("api"), Tokens: tokens, PublicReads: cfg.Auth.PublicReads, Login: http.HandlerFunc(page.Login), AllowedHosts: cfg.AllowedHosts, Gatherer: gatherer,
		Ready: d.ready, Now: time.Now, FailureWindow: time.Duration(cfg.Thresholds.FailureWindow), Metrics: m, View: view,
		Page: d.page, Heartbeats: beats, Processes: procs, RunbookURL: cfg.Alertmanager.RunbookURL,
	})
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	// Bounded so that the probes always answer (ADR-0034).
	maxConns := httpMax(cfg.HTTP.MaxConnections, fds)
	if maxConns < cfg.HTTP.MaxConnections {
		log.Warn("the fd limit leaves fewer connections than http.max_connections: the server's cap is lowered to fit; raise LimitNOFILE",
			zap.Int("max_connections", maxConns), zap.Int("max_connections_configured", cfg.HTTP.MaxConnections), zap.Int("capped_at", maxConns), zap.Int("fd_limit", fds.Limit))
	}
	lim := newConnLimiter(maxConns, m.Shed)
	m.Connections(lim.counts)
	// Two servers sharing the limiter: only the TCP one may get TLS and basic
	// auth; the socket's callers are known by the kernel.
	srv, sockSrv := lim.server(d.api), lim.server(d.api)
	srv.ErrorLog = zap.NewStdLog(log.Named("http"))
	sockSrv.ErrorLog = srv.ErrorLog
	// Event streams hold at most a quarter of the cap, so they never starve
	// the API (ADR-0051); shutdown ends them first, or Shutdown would wait.
	d.page.SetStreamCap(max(1, maxConns/4))
	srv.RegisterOnShutdown(d.page.CloseStreams)
	sockSrv.RegisterOnShutdown(d.page.CloseStreams)
	m.Streams(func() metrics.StreamCounts {
		s := d.page.Streams()
		return metrics.StreamCounts{Open: s.Open, Slow: s.Dropped, Refused: s.Refused}
	})
	serveErr := make(chan error, 2)
	web := &httpSide{srv: srv, sock: sockSrv, errs: serveErr}
	go func() { serveErr <- serveTCP(srv, lim.listener(ln), cfg.Web.ConfigFile, log) }()
	if err := serveSocket(cfg, func(ln net.Listener) { go func() { serveErr <- sockSrv.Serve(lim.listener(ln)) }() }, log); err != nil {
		web.close()
		return nil, err
	}
	scheme := "http"
	if cfg.Web.ConfigFile != "" {
		scheme = "web.config_file"
	}
	log.Info("listening", zap.String("addr", ln.Addr().String()), zap.String("transport", scheme), zap.String("db", st.Path()), zap.Int("max_connections", maxConns), zap.Int("max_connections_configured", cfg.HTTP.MaxConnections),
		zap.String("host_id", host.HostID()), zap.Bool("auth", token != ""), zap.Strings("allowed_hosts", cfg.AllowedHosts), zap.Bool("dry_run", cfg.Reaper.DryRun))
	return web, nil
}

// serveSocket opens the configured local socket, if any, and hands it to
// serve. The default socket taken by another daemon leaves this one on TCP
// alone (logged); a socket listen_unix names must open.
func serveSocket(cfg *config.Config, serve func(net.Listener), log *zap.Logger) error {
	path := cfg.UnixSocket()
	if path == "" {
		return nil
	}
	ln, err := listenUnix(path)
	switch {
	case errors.Is(err, errSocketServed) && cfg.ListenUnix == "":
		log.Warn("no local socket: another daemon serves the default one; set listen_unix to give this one its own", zap.String("socket", path))
		return nil
	case err != nil:
		return err
	}
	serve(ln)
	log.Info("listening on the local socket: callers known by their uid, no token", zap.String("socket", path))
	return nil
}

var errSocketServed = errors.New("another process serves this socket")

// listenUnix opens the local socket at path, mode 0666: anyone on the host
// may connect, and the kernel's peer uid decides what it may do (ADR-0062).
// A dead daemon's socket file is replaced; a served one is an error.
func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen_unix %s: exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen_unix %s: %w", path, errSocketServed)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("listen_unix %s: remove the stale socket: %w", path, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("listen_unix %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen_unix %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("listen_unix %s: %w", path, err)
	}
	return ln, nil
}
