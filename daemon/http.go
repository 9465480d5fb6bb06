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

// httpSide is the daemon's two servers, running: the TCP port's and the
// local socket's, and where either tells that it stopped serving.
type httpSide struct {
	srv, sock *http.Server
	errs      <-chan error
}

// close ends both servers at once: a start-up that failed after they
// began serving.
func (h *httpSide) close() {
	h.srv.Close()  //nolint:errcheck // failing start-up; the error that matters is returned
	h.sock.Close() //nolint:errcheck // as above
}

// serveHTTP builds the HTTP side (the operator's page, the API over the
// write path and the view, the limiter both servers share) and serves it
// on the TCP port and the local socket. token is the admin token ("":
// none), read from tokenPath.
func (d *daemon) serveHTTP(host *probe.Host, writer *transitions.Writer, gatherer prometheus.Gatherer, fds fdBudget, token, tokenPath string) (*httpSide, error) {
	cfg, log, st, view, m := d.cfg, d.log, d.st, d.view, d.metrics
	// Every read shows the heartbeat the judgement takes: this host's
	// heartbeat files are read at the request, never stored per sweep.
	d.requireHB.Store(&d.rp.Settings.Probe.RequireHeartbeat)
	beats := &wire.Heartbeats{HostID: host.HostID(), Last: reaper.LastHeartbeat, Required: func(typ string) bool {
		return slices.Contains(*d.requireHB.Load(), typ)
	}}
	// And an open entity's process facts, read from /proc at the request
	// from the tree the monitor keeps (ADR-0048), never on a timer.
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

// serveSocket opens the local socket the config names, if any, and hands
// it to serve. The default place taken by another daemon (a fleet on one
// SQLite file) leaves this one on TCP alone, said in the log; a socket
// listen_unix names must open.
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

// errSocketServed: another process answers on the socket's path.
var errSocketServed = errors.New("another process serves this socket")

// listenUnix opens the local socket at path, mode 0666: anyone on the
// host may connect, and the kernel names each caller's uid, which decides
// what it may do. A socket file left by a daemon that died is replaced;
// one another process serves is an error.
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
