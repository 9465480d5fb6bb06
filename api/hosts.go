package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/wire"
)

// hostNamesFresh is how long the hosts' names are cached: they change only
// when a daemon starts, and a list must not cost a query.
const hostNamesFresh = 5 * time.Second

type hostNameCache struct {
	mu    sync.Mutex
	at    time.Time
	names map[string]string
}

// hostNames is each host's recorded hostname, cached; nil when unreadable.
func (s *server) hostNames(ctx context.Context) map[string]string {
	c := &s.hosts
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); c.at.IsZero() || now.Sub(c.at) >= hostNamesFresh {
		// Not the request's context: a client leaving must not fail the waiters.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		names, err := s.Store.HostNames(rctx)
		if err != nil {
			s.Log.Debug("reading the hosts' names", zap.Error(err))
			return c.names
		}
		c.names, c.at = names, now
	}
	return c.names
}

// resolveHost is the host id of a ?host= name or id; false when it answered 400.
func (s *server) resolveHost(w http.ResponseWriter, r *http.Request, v string) (string, bool) {
	if v == "" {
		return "", true
	}
	id, err := wire.ResolveHost(v, s.hostNames(r.Context()))
	if err != nil {
		writeError(w, http.StatusBadRequest, causeBadRequest, "host: "+err.Error())
		return "", false
	}
	return id, true
}
