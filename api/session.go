package api

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"watchdog/wire"
)

// The page's session trades a token for a cookie, since a navigating browser
// cannot send a bearer token. The cookie holds a random id, never the token,
// and ends when its token is removed or rotated (docs/security.md).
const (
	// SessionCookie names the page's session cookie (POST /api/session).
	SessionCookie = "watchdog_session"
	sessionTTL    = 12 * time.Hour
	// maxSessions bounds the table: the oldest session goes first.
	maxSessions = 1024
)

type session struct {
	name    string
	digest  [sha256.Size]byte
	expires time.Time
}

type sessions struct {
	mu sync.Mutex
	m  map[string]session
}

func (ss *sessions) add(t Token, now time.Time) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.m == nil {
		ss.m = map[string]session{}
	}
	if len(ss.m) >= maxSessions {
		oldest := ""
		for k, v := range ss.m {
			if oldest == "" || v.expires.Before(ss.m[oldest].expires) {
				oldest = k
			}
		}
		delete(ss.m, oldest)
	}
	ss.m[id] = session{name: t.Name, digest: t.digest, expires: now.Add(sessionTTL)}
	return id
}

// token is the token r's session cookie names, while it is valid.
func (ss *sessions) token(r *http.Request, ts *Tokens, now time.Time) (Token, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || len(c.Value) != 64 {
		return Token{}, false
	}
	ss.mu.Lock()
	se, ok := ss.m[c.Value]
	if ok && now.After(se.expires) {
		delete(ss.m, c.Value)
		ok = false
	}
	ss.mu.Unlock()
	if !ok {
		return Token{}, false
	}
	for _, t := range ts.list() {
		if t.Name == se.name && subtle.ConstantTimeCompare(t.digest[:], se.digest[:]) == 1 {
			return t, true
		}
	}
	return Token{}, false
}

// Session is the body of POST /api/session.
type Session struct {
	Token string `json:"token"`
}

// login is POST /api/session: 204 with a session cookie for an accepted token.
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	var body Session
	if err := wire.Decode(r.Body, &body, false); err != nil {
		s.fail(w, r, err)
		return
	}
	t, ok := s.Tokens.match(body.Token)
	if s.Tokens == nil || !ok {
		writeError(w, http.StatusUnauthorized, causeUnauthorized, "that token is not one this daemon accepts")
		return
	}
	if !t.Scopes.has(ScopeRead) {
		writeError(w, http.StatusForbidden, "forbidden", "token:"+t.Name+" may not read the page (its scopes do not include read)")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: s.sessions.add(t, s.Now()), Path: "/",
		MaxAge: int(sessionTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}
