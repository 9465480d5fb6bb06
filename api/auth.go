package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"watchdog/transitions"
	"watchdog/wire"
)

// Scopes are what a caller may do (docs/security.md).
type Scopes uint8

// The scopes: read; report (register, heartbeat, transition); triage
// (snooze, dismiss); admin (all, and the admin actor).
const (
	ScopeRead Scopes = 1 << iota
	ScopeReport
	ScopeTriage
	ScopeAdmin
)

// has says whether s grants want (admin grants everything).
func (s Scopes) has(want Scopes) bool { return s&ScopeAdmin != 0 || s&want == want }

// ParseScope is a scope by its config name.
func ParseScope(name string) (Scopes, bool) {
	switch name {
	case "read":
		return ScopeRead, true
	case "report":
		return ScopeReport, true
	case "triage":
		return ScopeTriage, true
	case "admin":
		return ScopeAdmin, true
	}
	return 0, false
}

// Token is one accepted bearer token: its secret, its audit name, its
// scopes, and the uids it speaks for (none: any pid, no uid proven).
type Token struct {
	Name   string
	Secret string
	Scopes Scopes
	UIDs   []int
	digest [sha256.Size]byte
}

// Tokens is the set of tokens a handler accepts; Set replaces it while it
// serves (SIGHUP).
type Tokens struct{ p atomic.Pointer[[]Token] }

// NewTokens holds ts.
func NewTokens(ts []Token) *Tokens {
	t := &Tokens{}
	t.Set(ts)
	return t
}

// Set replaces the tokens.
func (t *Tokens) Set(ts []Token) {
	ts = slices.Clone(ts)
	for i := range ts {
		ts[i].digest = sha256.Sum256([]byte(ts[i].Secret))
	}
	t.p.Store(&ts)
}

func (t *Tokens) list() []Token {
	if t == nil {
		return nil
	}
	return *t.p.Load()
}

// match compares SHA-256 digests in constant time: not even the length leaks.
func (t *Tokens) match(tok string) (Token, bool) {
	got := sha256.Sum256([]byte(tok))
	var found Token
	ok := false
	for _, c := range t.list() {
		if subtle.ConstantTimeCompare(got[:], c.digest[:]) == 1 {
			found, ok = c, true
		}
	}
	return found, ok
}

// Peer is a local socket's caller as the kernel names it (SO_PEERCRED).
type Peer struct{ UID, GID, PID int }

type peerKey struct{}

// PeerContext is the http.Server's ConnContext: a unix socket peer's
// credentials, read once per connection, ride in each request's context.
func PeerContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return context.WithValue(ctx, peerKey{}, (*Peer)(nil))
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		// A peer the kernel cannot name is nobody's.
		return context.WithValue(ctx, peerKey{}, (*Peer)(nil))
	}
	return context.WithValue(ctx, peerKey{}, &Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)})
}

// peerOf is the request's socket peer: ok over the socket, p nil if unnamed.
func peerOf(r *http.Request) (p *Peer, ok bool) {
	p, ok = r.Context().Value(peerKey{}).(*Peer)
	return p, ok
}

// Caller is who a request is, decided on its headers before any body is
// read: the principal its writes are made and audited as, and its scopes.
type Caller struct {
	Principal transitions.Principal
	Scopes    Scopes
}

type callerKey struct{}

// CallerOf is the caller the API decided for r; the zero Caller if none.
func CallerOf(r *http.Request) Caller {
	c, _ := r.Context().Value(callerKey{}).(Caller)
	return c
}

// socketScopes are a socket peer's (its own processes only); root's are admin.
const socketScopes = ScopeRead | ScopeReport | ScopeTriage

// caller decides who r is: a socket peer by its uid; else a bearer token or
// the page's session cookie; else anonymous, which reads only with
// auth.public_reads and does everything only with auth: none.
func (s *server) caller(r *http.Request) (Caller, bool) {
	if p, ok := peerOf(r); ok {
		if p == nil {
			return Caller{}, false
		}
		c := Caller{Principal: transitions.PeerPrincipal(p.UID, ""), Scopes: socketScopes}
		if p.UID == 0 {
			c.Scopes = ScopeAdmin
		}
		return c, true
	}
	if s.Tokens == nil {
		// auth: none, loopback only: any local process.
		return Caller{Principal: transitions.Principal{Name: anonymous}, Scopes: ScopeAdmin}, true
	}
	if h := r.Header.Get("Authorization"); h != "" && !isBasic(h) {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return Caller{}, false
		}
		t, ok := s.Tokens.match(strings.TrimSpace(tok))
		if !ok {
			return Caller{}, false
		}
		return tokenCaller(t), true
	}
	if t, ok := s.sessions.token(r, s.Tokens, s.Now()); ok {
		return tokenCaller(t), true
	}
	c := Caller{Principal: transitions.Principal{Name: anonymous}}
	if s.PublicReads {
		c.Scopes = ScopeRead
	}
	return c, true
}

// anonymous is the name of a caller that gave no credentials.
const anonymous = "anonymous"

func tokenCaller(t Token) Caller {
	return Caller{Principal: transitions.Principal{Name: "token:" + t.Name, UIDs: t.UIDs}, Scopes: t.Scopes}
}

// needs runs h only for a caller with want: bad or missing credentials
// are 401, a missing scope 403.
func (s *server) needs(want Scopes, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.caller(r)
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="watchdog"`)
			writeError(w, http.StatusUnauthorized, causeUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>); the one sent is not one this daemon accepts")
			return
		case !c.Scopes.has(want) && c.Principal.Name == anonymous:
			w.Header().Set("WWW-Authenticate", `Bearer realm="watchdog"`)
			writeError(w, http.StatusUnauthorized, causeUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>), or a request over the local socket")
			return
		case !c.Scopes.has(want):
			writeError(w, http.StatusForbidden, transitions.CauseForbidden, c.Principal.Name+" may not "+scopeVerb(want)+" (its scopes do not include "+scopeName(want)+")")
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	})
}

func scopeName(s Scopes) string {
	switch s {
	case ScopeRead:
		return "read"
	case ScopeReport:
		return "report"
	case ScopeTriage:
		return "triage"
	}
	return "admin"
}

func scopeVerb(s Scopes) string {
	switch s {
	case ScopeRead:
		return "read entities"
	case ScopeReport:
		return "register, heartbeat or transition"
	case ScopeTriage:
		return "snooze or dismiss"
	}
	return "do that"
}

// pageAccess guards a page route: assets and the runbook are open, the
// stream needs read, and the other pages answer the login form without it.
// It tells the page whether the caller's session may triage.
func (s *server) pageAccess(pattern string, h http.Handler) http.Handler {
	switch pattern {
	case "GET /assets/", "GET /runbook":
		return h
	case "GET /events":
		return s.needs(ScopeRead, h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.caller(r)
		if !ok || !c.Scopes.has(ScopeRead) {
			if s.Login != nil {
				s.Login.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="watchdog"`)
			writeError(w, http.StatusUnauthorized, causeUnauthorized, "a valid bearer token is required (Authorization: Bearer <token>)")
			return
		}
		ctx := context.WithValue(r.Context(), callerKey{}, c)
		h.ServeHTTP(w, r.WithContext(wire.WithSessionWrites(ctx, c.Scopes.has(ScopeTriage) && s.Tokens != nil && !viaBearer(r))))
	})
}

// viaBearer says whether r carried its own bearer token.
func viaBearer(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	return h != "" && !isBasic(h)
}

// isBasic says whether an Authorization header is the web config's basic
// auth: a gate in front of the daemon, not a principal (docs/security.md).
func isBasic(h string) bool {
	scheme, _, _ := strings.Cut(h, " ")
	return strings.EqualFold(scheme, "Basic")
}
