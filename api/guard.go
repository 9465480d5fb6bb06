package api

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
)

// Causes of the browser-facing refusals (ADR-0011).
const (
	causeHostNotAllowed  = "host_not_allowed"
	causeCrossOrigin     = "cross_origin"
	causeUnsupportedType = "unsupported_media_type"
)

// hostAllowed reports whether a Host header names this daemon in a way no
// other site can make a browser send (DNS rebinding): an IP literal,
// localhost and its subdomains, or allowed_hosts. No Host (HTTP/1.0) passes;
// the port is not compared, since attackers control names, not ports (ADR-0011).
func (s *server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ".")
	if net.ParseIP(host) != nil {
		return true
	}
	host = strings.ToLower(host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, h := range s.AllowedHosts {
		if strings.ToLower(strings.TrimSuffix(h, ".")) == host {
			return true
		}
	}
	return false
}

// guardHost refuses a foreign Host on every endpoint: with DNS rebinding a
// page could read the API as well as write it.
func (s *server) guardHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, causeHostNotAllowed, fmt.Sprintf(
				"Host %s is not this daemon's name (allowed: IP addresses, localhost, and allowed_hosts in the config)", quote(r.Host)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin reports whether a write may come from where its browser headers
// say: no Origin (not a browser) or the request's own Host, and Sec-Fetch-Site,
// if sent, same-origin or none. Another local port is another origin.
func sameOrigin(r *http.Request) (bool, string) {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return false, "Sec-Fetch-Site is " + quote(site)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true, ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false, "Origin " + quote(origin) + " is not this daemon"
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return false, "Origin " + quote(origin) + " is not this daemon (" + quote(r.Host) + ")"
	}
	return true, ""
}

// isJSON reports whether a Content-Type is application/json, parameters allowed.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// mutating guards a POST before its body is read: cross-origin is 403, a
// caller without want 401 or 403 (0: the login), and a non-JSON body 415,
// which no form or no-cors fetch can send without a CORS preflight.
func (s *server) mutating(want Scopes, h http.HandlerFunc) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
			if ct == "" {
				ct = "none"
			} else {
				ct = quote(ct)
			}
			writeError(w, http.StatusUnsupportedMediaType, causeUnsupportedType, "Content-Type must be application/json (got "+ct+")")
			return
		}
		h(w, r)
	})
	var guarded http.Handler = inner
	if want != 0 {
		guarded = s.needs(want, inner)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, why := sameOrigin(r); !ok {
			s.Log.Debug("cross-origin write refused", zap.String("path", r.URL.Path), zap.String("why", why))
			writeError(w, http.StatusForbidden, causeCrossOrigin, "cross-origin request refused: "+why+"; web pages may not write to watchdog")
			return
		}
		guarded.ServeHTTP(w, r)
	})
}
