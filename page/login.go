package page

import (
	"context"
	"html/template"
	"net/http"
	"strings"
	"time"

	"watchdog/wire"
)

// sessionWrites says whether the request's own session may triage (no token asked).
func sessionWrites(ctx context.Context) bool { return wire.SessionWrites(ctx) }

var loginTmpl = template.Must(template.New("").ParseFS(templateFS, "templates/layout.html", "templates/login.html"))

// Login answers a page request without credentials with the token form (401).
func Login(w http.ResponseWriter, _ *http.Request) {
	status := http.StatusUnauthorized
	var b strings.Builder
	data := layout{Title: "sign in · watchdog", GeneratedAt: time.Now().UTC().Format(time.RFC3339), Login: true}
	if err := loginTmpl.ExecuteTemplate(&b, "login.html", data); err != nil {
		http.Error(w, "internal error: see the watchdog log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.Header().Set("WWW-Authenticate", `Bearer realm="watchdog"`)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}
