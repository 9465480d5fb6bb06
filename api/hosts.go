package api

import (
	"context"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"watchdog/wire"
)

// hostNamesFresh is how long the hosts' names are read once for: they
// change only when a daemon starts, and a list must not cost a query.
const hostNamesFresh = 5 * time.Second

// hostNameCache holds the last reading of the hosts' names.
type hostNameCache struct {
	mu    sync.Mutex
	at    time.Time
	names map[string]string
}

// hostNames is the hostname each host's daemon recorded (store.HostNames),
// read at most every hostNamesFresh; nil when the store has none or could
// not be read (the ids are shown then, and logged at debug).
func (s *server) hostNames(ctx context.Context) map[string]string {
	c := &s.hosts
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); c.at.IsZero() || now.Sub(c.at) >= hostNamesFresh {
		// Not the request's context: a client that goes away must not
		// fail the read for the requests waiting on it.
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

// resolveHost is the host id of a ?host= value, a name or an id
// (wire.ResolveHost); false when it answered 400 for an ambiguous name.
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
