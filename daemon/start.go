package daemon

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/zap"

	"watchdog/config"
	"watchdog/live"
	"watchdog/store"
	"watchdog/tokenfile"
)

// Check reports what Run would refuse to start on that the config file does
// not show by itself (an unreadable auth.token_file, a missing store
// directory, a bad web config), one problem per line.
func Check(cfg *config.Config) error {
	_, err := checkHost(cfg)
	return err
}

// checkHost is Check, also returning the configured token file as read.
func checkHost(cfg *config.Config) (tokenfile.File, error) {
	f, err := configuredToken(cfg.Auth)
	if cfg.Web.ConfigFile != "" {
		// A web config that would refuse every connection is a start-up error.
		if werr := web.Validate(cfg.Web.ConfigFile); werr != nil {
			err = errors.Join(err, fmt.Errorf("web.config_file %s: %w", cfg.Web.ConfigFile, werr))
		}
	}
	return f, errors.Join(err, store.CheckDSN(cfg.Store.Driver, cfg.Store.DSN))
}

// openStore opens the configured store under the lock that keeps a second
// daemon of hostID off it, and checks it. closeAll releases everything.
func openStore(ctx context.Context, cfg *config.Config, hostID string, log *zap.Logger) (st store.Backend, closeAll func(), err error) {
	// One daemon per database and host, or two would enforce the same
	// entities; taken before the store opens, so a refused daemon does not
	// even migrate. PostgreSQL has no file: holdHost below.
	unlock, err := store.LockHost(cfg.Store.Driver, cfg.Store.DSN, hostID)
	if err != nil {
		return nil, nil, err
	}
	// Rows carry the columns fleet-wide reads order by (ADR-0058).
	store.SetDerivation(live.Columns)
	if st, err = store.Open(ctx, cfg.Store.Driver, cfg.Store.DSN); err != nil {
		unlock() //nolint:errcheck // the kernel drops it at exit anyway
		return nil, nil, err
	}
	release := func() {}
	closeAll = func() {
		release()
		st.Close()
		unlock() //nolint:errcheck // as above
	}
	if sl, ok := st.(sessionLocker); ok {
		// One daemon per host on a shared server, held by a session lock while
		// this daemon runs (a rolling deploy must stop the old one first).
		r, err := holdHost(ctx, sl, hostID)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		release = r
	}
	checkStart := time.Now()
	if err := st.QuickCheck(ctx); err != nil {
		closeAll()
		return nil, nil, err
	}
	log.Info("store checked", zap.String("db", st.Path()), zap.Duration("took", time.Since(checkStart)))
	return st, closeAll, nil
}

// hostLockBase offsets the per-host session locks from the leader's key.
const hostLockBase int64 = 0x7764680000000000 // "wdh" and a hash

// holdHost takes hostID's session lock on a PostgreSQL store, or says which
// daemon is in the way (its connection is named after the host).
func holdHost(ctx context.Context, sl sessionLocker, hostID string) (release func(), err error) {
	h := fnv.New64a()
	h.Write([]byte(hostID)) //nolint:errcheck // a hash.Hash never fails
	key := hostLockBase | int64(h.Sum64()&0xffffffffff)
	lock := sl.LeaderLock(key, "watchdog host "+hostID)
	held, _, err := lock.Try(ctx)
	if err != nil {
		return nil, fmt.Errorf("take this host's lock on the store: %w", err)
	}
	if !held {
		return nil, fmt.Errorf("another watchdog daemon of host %q already serves this store (its connection is named %q in pg_stat_activity): stop it first, or give this one another host_id", hostID, "watchdog host "+hostID)
	}
	return func() { lock.Release(context.WithoutCancel(ctx)) }, nil //nolint:errcheck // closing the session frees it anyway
}
