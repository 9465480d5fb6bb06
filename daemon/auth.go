package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.uber.org/zap"

	"watchdog/api"
	"watchdog/config"
	"watchdog/tokenfile"
)

// adminTokenName is what the audit rows call the auth.token_file token
// (or the daemon's own): the administrator's, with scope admin.
const adminTokenName = "admin"

// readTokens is the API's token set: the admin token (already read) and
// each of auth.tokens, read from its file now.
func readTokens(a config.Auth, admin string) ([]api.Token, error) {
	var ts []api.Token
	if admin != "" {
		ts = append(ts, api.Token{Name: adminTokenName, Secret: admin, Scopes: api.ScopeAdmin})
	}
	var errs []error
	for i, t := range a.Tokens {
		f, err := tokenfile.Read(t.File)
		if err != nil {
			errs = append(errs, fmt.Errorf("auth.tokens[%d] (%s): %w", i, t.Name, err))
			continue
		}
		var scopes api.Scopes
		for _, name := range t.Scopes {
			sc, _ := api.ParseScope(name) // validated with the config
			scopes |= sc
		}
		uids, err := t.UIDs()
		if err != nil {
			errs = append(errs, fmt.Errorf("auth.tokens[%d] (%s): %w", i, t.Name, err))
			continue
		}
		if t.Name == adminTokenName && admin != "" {
			errs = append(errs, fmt.Errorf("auth.tokens[%d]: the name %q is the auth.token_file token's", i, t.Name))
			continue
		}
		if slices.ContainsFunc(ts, func(o api.Token) bool { return o.Secret == f.Token }) {
			errs = append(errs, fmt.Errorf("auth.tokens[%d] (%s): %s holds the same token as another: each token needs a secret of its own", i, t.Name, t.File))
			continue
		}
		ts = append(ts, api.Token{Name: t.Name, Secret: f.Token, Scopes: scopes, UIDs: uids})
	}
	return ts, errors.Join(errs...)
}

// reloadTokens re-reads every token file (SIGHUP): a token is rotated by
// writing its file and reloading. A file that cannot be read keeps the
// running set whole.
func (d *daemon) reloadTokens(a config.Auth) {
	if d.tokens == nil {
		return // auth: none; turning auth on needs a restart
	}
	admin := d.adminToken
	if d.adminPath != "" {
		f, err := tokenfile.Read(d.adminPath)
		if err != nil {
			d.log.Error("reload: cannot re-read the admin token; keeping every token as it was", zap.Error(err))
			return
		}
		admin = f.Token
	}
	ts, err := readTokens(a, admin)
	if err != nil {
		d.log.Error("reload: keeping every token as it was", zap.String("error", strings.ReplaceAll(err.Error(), "\n", "; ")))
		return
	}
	d.tokens.Set(ts)
	d.adminToken = admin
	d.log.Info("tokens reloaded", zap.Int("tokens", len(ts)))
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
