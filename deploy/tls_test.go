package deploy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"watchdog/internal/testenv"
)

// TestWebConfigTLSScrapedByPrometheus: the daemon's TCP port under a web
// config in exporter-toolkit's format (TLS from certificates made here,
// basic auth with a bcrypt hash), scraped by a real Prometheus the way
// docs/security.md shows; plain HTTP gets no metrics, a wrong password is
// refused, the page signs in behind basic auth, and the local socket
// stays plain.
func TestWebConfigTLSScrapedByPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon and Prometheus; skipped with -short")
	}
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus not installed: make test installs the Debian package prometheus (Makefile APT_PACKAGES)")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := makeCerts(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("scrape-pass"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	writeFile(t, webConfig, fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prom: %s\n", certFile, keyFile, hash))
	addr := freeLoopbackAddr(t)
	sock := filepath.Join(dir, "api.sock")
	cfg := filepath.Join(dir, "config.yaml")
	writeFile(t, cfg, fmt.Sprintf("listen: %s\nlisten_unix: %s\nstore:\n  dsn: %s\nlog:\n  format: json\nweb:\n  config_file: %s\n",
		addr, sock, filepath.Join(dir, "watchdog.db"), webConfig))
	logs := &testenv.Buffer{}
	cmd := exec.Command(buildWatchdog(t), "serve", "--config", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTIFY_SOCKET=") || strings.HasPrefix(kv, "WATCHDOG_")
	})
	exited := startProcess(t, "watchdog serve", cmd, logs, true)

	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(caFile)
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("read the CA back: %v", err)
	}
	tlsClient := &http.Client{Timeout: requestCeiling, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr
	type answer struct {
		code   int
		body   string
		header http.Header
	}
	do := func(c *http.Client, method, url, user, pass, body string, hdr ...string) (answer, error) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			return answer{}, err
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			return answer{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return answer{resp.StatusCode, string(b), resp.Header}, err
	}
	testenv.Eventually(t, "watchdog serve ready over HTTPS", realDataDeadline, func() (bool, string) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("watchdog serve exited before it was ready (%v):\n%s", err, logs.String())
		default:
		}
		a, err := do(tlsClient, "GET", base+"/readyz", "prom", "scrape-pass", "")
		return err == nil && a.code == 200, fmt.Sprintf("%d %v", a.code, err)
	})

	// The port speaks HTTPS only: plain HTTP is answered 400 by the TLS
	// server, with no metrics.
	plain, err := do(&http.Client{Timeout: requestCeiling}, "GET", "http://"+addr+"/metrics", "prom", "scrape-pass", "")
	if err == nil && (plain.code == 200 || strings.Contains(plain.body, "watchdog_")) {
		t.Errorf("plain HTTP /metrics: %d %.200q, want no metrics", plain.code, plain.body)
	}
	for _, c := range []struct{ name, user, pass string }{
		{"a wrong password", "prom", "wrong"},
		{"an unknown user", "nobody", "scrape-pass"},
		{"no credentials", "", ""},
	} {
		a, err := do(tlsClient, "GET", base+"/metrics", c.user, c.pass, "")
		if err != nil || a.code != 401 || !strings.Contains(a.header.Get("WWW-Authenticate"), "Basic") || strings.Contains(a.body, "watchdog_") {
			t.Errorf("%s: %d %v %.200q, want 401 asking for Basic, no metrics", c.name, a.code, err, a.body)
		}
	}
	if a, err := do(tlsClient, "GET", base+"/metrics", "prom", "scrape-pass", ""); err != nil || a.code != 200 || !strings.Contains(a.body, "watchdog_entities") {
		t.Errorf("/metrics over HTTPS with the password: %d %v", a.code, err)
	}
	// HTTP/1.1 only (ADR-0063): a client offering h2 is answered in 1.1.
	h2 := &http.Client{Timeout: requestCeiling, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	if req, err := http.NewRequest("GET", base+"/healthz", nil); err == nil {
		req.SetBasicAuth("prom", "scrape-pass")
		if resp, err := h2.Do(req); err != nil || resp.ProtoMajor != 1 {
			t.Errorf("a client offering h2: %v %v, want HTTP/1.1", resp, err)
		} else {
			resp.Body.Close()
		}
	}

	// The page behind basic auth: the sign-in form, then the token traded
	// for a Secure session cookie; the browser keeps sending basic auth.
	if a, err := do(tlsClient, "GET", base+"/", "prom", "scrape-pass", ""); err != nil || a.code != 401 || !strings.Contains(a.body, "<form") {
		t.Errorf("GET / behind basic auth, no session: %d %v, want the sign-in form (401)", a.code, err)
	}
	token, err := os.ReadFile(filepath.Join(dir, "watchdog.token"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := do(tlsClient, "POST", base+"/api/session", "prom", "scrape-pass", fmt.Sprintf(`{"token":%q}`, strings.TrimSpace(string(token))), "Content-Type", "application/json")
	cookie := a.header.Get("Set-Cookie")
	if err != nil || a.code != 204 || !strings.Contains(cookie, "Secure") {
		t.Fatalf("POST /api/session behind basic auth: %d %v, cookie %q: want 204 and a Secure cookie", a.code, err, cookie)
	}
	name, value, _ := strings.Cut(strings.Split(cookie, ";")[0], "=")
	if a, err := do(tlsClient, "GET", base+"/", "prom", "scrape-pass", "", "Cookie", name+"="+value); err != nil || a.code != 200 {
		t.Errorf("GET / with the session behind basic auth: %d %v, want 200", a.code, err)
	}

	// The local socket is the kernel's: no TLS, no basic auth.
	sockClient := &http.Client{Timeout: requestCeiling, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	if a, err := do(sockClient, "GET", "http://localhost/api/v1/entities", "", "", ""); err != nil || a.code != 200 {
		t.Errorf("the local socket under a web config: %d %v, want 200 in plain HTTP", a.code, err)
	}

	// A real Prometheus, as docs/security.md configures it, and one job
	// with a wrong password.
	prom := startPrometheusWith(t, promBin, fmt.Sprintf(`  - job_name: watchdog
    scheme: https
    tls_config:
      ca_file: %s
    basic_auth:
      username: prom
      password: scrape-pass
    static_configs:
      - targets: [%q]
  - job_name: wrongpass
    scheme: https
    tls_config:
      ca_file: %s
    basic_auth:
      username: prom
      password: wrong
    static_configs:
      - targets: [%q]
`, caFile, addr, caFile, addr))
	testenv.Eventually(t, "Prometheus scraping over TLS, the wrong password refused", realDataDeadline, func() (bool, string) {
		ok, err1 := prom.query(`up{job="watchdog"} == 1`)
		bad, err2 := prom.query(`up{job="wrongpass"} == 0`)
		have, err3 := prom.query(`watchdog_entities{job="watchdog"}`)
		return err1 == nil && err2 == nil && err3 == nil && len(ok) == 1 && len(bad) == 1 && len(have) > 0,
			fmt.Sprintf("up %v %v, wrongpass %v %v, series %d %v\n%s", ok, err1, bad, err2, len(have), err3, prom.logs.String())
	})
}

// makeCerts writes a CA and a server certificate it signed for 127.0.0.1
// into dir, and returns the CA's, the certificate's and the key's paths.
func makeCerts(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "watchdog test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	writeFile(t, caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return caFile, certFile, keyFile
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
