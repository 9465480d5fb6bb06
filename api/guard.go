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

// Causes of the browser-facing refusals (see the package doc).
const (
	causeHostNotAllowed  = "host_not_allowed"
	causeCrossOrigin     = "cross_origin"
	causeUnsupportedType = "unsupported_media_type"
)

// hostAllowed reports whether a request's Host header names this daemon
// in a way no other web site can make a browser send (DNS rebinding: a
// page of attacker.example whose name is re-pointed at 127.0.0.1 reaches
// the daemon with Host: attacker.example). Allowed are an IP literal (a
// browser sends the page's own host, so an IP Host means the page was
// loaded from that IP, i.e. from this daemon, or the client is no browser
// at all), localhost and its subdomains (resolved on the host, never by
// an attacker's DNS), and the configured allowed_hosts. A missing Host
// (HTTP/1.0) comes from no browser and passes. The port is not compared:
// behind a proxy or a port mapping it differs legitimately, and a
// rebinding attacker controls names, not ports.
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

// guardHost refuses, on every endpoint, a request whose Host names another
// site: with DNS rebinding a page could otherwise read the API (GET) as
// well as write it.
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

// sameOrigin reports whether a mutating request may come from where its
// browser headers say it does: no Origin (curl, the Go client, Python's
// urllib: not a browser) or an Origin whose host:port is the request's
// own Host (a page this daemon served), and a Sec-Fetch-Site, when sent,
// of same-origin or none (typed by the user). Anything else is a web page
// of another origin, which may not write here even from localhost: another
// port is another origin.
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

// isJSON reports whether a Content-Type is application/json, parameters
// (charset) allowed.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// mutating guards a POST handler, before anything reads the body: a
// cross-origin browser request is 403 (a page may not drive the API), a
// caller without want 401 or 403 (needs; 0 wants nothing: the login), a
// body that does not say application/json 415 (HTML forms and no-cors
// fetches can send only text/plain, form and multipart bodies without a
// CORS preflight, which this daemon never grants).
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
