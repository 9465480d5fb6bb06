package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"watchdog/api"
	"watchdog/config"
	"watchdog/tokenfile"
)

// adminTokenName is what the audit rows call the admin token.
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

// reloadTokens re-reads every token file (rotation is write and SIGHUP);
// one unreadable file keeps the running set whole.
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

// configuredToken reads auth.token_file; the zero File when none is set.
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

// ownToken returns the daemon's own token beside the database, creating it
// on first start. Its path is logged; the token never is.
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
