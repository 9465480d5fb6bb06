package e2e

// End-to-end tests of the safe default API (docs/reference/http-api.md, Authentication; ADR-0011): the built
// daemon on its default auth creates watchdog.token beside its database,
// requires it for writes, keeps it across restarts, and the CLI's --server
// finds it; auth: none works on loopback only; a token file that is not
// one line in a regular file stops the daemon at start, at once.

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/tokenfile"
)

// authPost sends a POST with the given headers (Content-Type defaults to
// application/json) and returns the status.
func authPost(t *testing.T, base, path, body string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(NoAuth, "1") // only what hdr says: no token unless it gives one
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Authorization" {
			req.Header.Del(NoAuth)
		}
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	return resp.StatusCode
}

// authGetStatus reads GET path's status.
func authGetStatus(t *testing.T, base, path string) int {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestServeDefaultTokenGuardsWrites(t *testing.T) {
	t.Parallel()
	dir, db, cfg := svSetup(t, svConfig{})
	d := svStart(t, cfg, db)
	tokPath := filepath.Join(dir, "watchdog.token")
	fi, err := os.Lstat(tokPath)
	if err != nil {
		t.Fatalf("no token file beside the database: %v\n%s", err, d.logs.String())
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("token file mode %s, want -rw-------", fi.Mode())
	}
	raw, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(string(raw))
	if len(tok) < 32 || strings.Contains(d.logs.String(), tok) {
		t.Errorf("token %d characters, or logged", len(tok))
	}
	bearer := "Bearer " + tok
	reg := func(id string) string { return `{"type":"session","id":"` + id + `","lifecycle":"running"}` }

	for _, c := range []struct {
		name   string
		id     string
		hdr    []string
		status int
	}{
		{"no token", "s-none", nil, 401},
		{"wrong token", "s-wrong", []string{"Authorization", "Bearer nope"}, 401},
		{"foreign Origin", "s-origin", []string{"Authorization", bearer, "Origin", "http://evil.example"}, 403},
		{"text/plain", "s-text", []string{"Authorization", bearer, "Content-Type", "text/plain"}, 415},
		{"form-encoded", "s-form", []string{"Authorization", bearer, "Content-Type", "application/x-www-form-urlencoded"}, 415},
		{"foreign Host", "s-host", []string{"Authorization", bearer, "Host", "attacker.example"}, 403},
		{"the token", "s-ok", []string{"Authorization", bearer}, 201},
	} {
		if got := authPost(t, d.base, "/api/v1/entities", reg(c.id), c.hdr...); got != c.status {
			t.Errorf("%s: %d, want %d", c.name, got, c.status)
		}
		want := 404
		if c.status == 201 {
			want = 200
		}
		if got := authGetStatus(t, d.base, "/api/v1/entities/session/"+c.id); got != want {
			t.Errorf("%s: read back %d, want %d (refused requests change nothing)", c.name, got, want)
		}
	}

	// The CLI finds the token beside the database: ./watchdog.db's from
	// the daemon's directory, WATCHDOG_DB's from anywhere.
	if r := rmtRun(t, dir, nil, "", "heartbeat", "session/s-ok", "--server", d.base); r.code != 0 {
		t.Errorf("heartbeat from the database's directory: %+v", r)
	}
	elsewhere := t.TempDir()
	if r := rmtRun(t, elsewhere, []string{"WATCHDOG_DB=" + db}, "", "heartbeat", "session/s-ok", "--server", d.base); r.code != 0 {
		t.Errorf("heartbeat with WATCHDOG_DB: %+v", r)
	}
	r := rmtRun(t, elsewhere, nil, "", "heartbeat", "session/s-ok", "--server", d.base)
	if r.code != 1 || !strings.Contains(r.stderr, "unauthorized") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("heartbeat without a token: %+v", r)
	}
	if _, err := os.Stat(tokenfile.SystemPath); os.IsNotExist(err) && !strings.Contains(r.stderr, "no token found (WATCHDOG_TOKEN_FILE unset; looked in watchdog.token (absent), "+tokenfile.SystemPath+" (absent))") {
		t.Errorf("the 401 does not say where it looked: %q", r.stderr)
	}

	// A restart keeps the token: clients holding it go on working.
	d.signal(syscall.SIGTERM)
	if code := d.wait(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	d = svStart(t, cfg, db)
	again, err := os.ReadFile(tokPath)
	if err != nil || string(again) != string(raw) {
		t.Fatalf("token after restart %q (%v), want the same", again, err)
	}
	if got := authPost(t, d.base, "/api/v1/entities", reg("s-after"), "Authorization", bearer); got != 201 {
		t.Errorf("old token after restart: %d", got)
	}
}

func TestServeAuthNone(t *testing.T) {
	t.Parallel()
	dir, db, _ := svSetup(t, svConfig{})
	cfg := writeFile(t, dir, "none.yaml", svConfig{}.yaml(db)+"auth: none\n")
	d := svStart(t, cfg, db)
	if got := authPost(t, d.base, "/api/v1/entities", `{"type":"session","id":"s-1"}`); got != 201 {
		t.Errorf("auth: none, no token: %d", got)
	}
	// The browser rules hold without auth too.
	if got := authPost(t, d.base, "/api/v1/entities", `{"type":"session","id":"s-2"}`, "Content-Type", "text/plain"); got != 415 {
		t.Errorf("auth: none, text/plain: %d", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "watchdog.token")); !os.IsNotExist(err) {
		t.Errorf("auth: none created a token file (%v)", err)
	}
}

// TestServeRefusesBadAuthAtStart: each of these stops serve with one clear
// error, at once (a FIFO or /dev/zero used to hang it or eat memory).
func TestServeRefusesBadAuthAtStart(t *testing.T) {
	t.Parallel()
	dir, db, _ := svSetup(t, svConfig{})
	base := svConfig{}.yaml(db)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	two := writeFile(t, dir, "two", "tok\nother\n")
	good := writeFile(t, dir, "good", "tok\n")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, extra, want string
	}{
		{"FIFO", "auth:\n  token_file: " + fifo + "\n", "is not a regular file (a FIFO)"},
		{"/dev/zero", "auth:\n  token_file: /dev/zero\n", "is not a regular file (a character device)"},
		{"two lines", "auth:\n  token_file: " + two + "\n", "more than one line"},
		{"empty", "auth:\n  token_file: " + writeFile(t, dir, "empty", "") + "\n", "is empty"},
		{"symlink", "auth:\n  token_file: " + link + "\n", "is a symlink"},
		{"none on every interface", "auth: none\n", `auth: none is refused with listen "0.0.0.0:0"`},
	} {
		cfgText := base + c.extra
		if c.name == "none on every interface" {
			cfgText = strings.Replace(cfgText, "listen: 127.0.0.1:0", "listen: 0.0.0.0:0", 1)
		}
		cfg := writeFile(t, dir, strings.ReplaceAll(c.name, "/", "_")+".yaml", cfgText)
		start := time.Now()
		r := authServeBriefly(t, cfg)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) || strings.Contains(r.stderr, "goroutine") {
			t.Errorf("%s: exit %d, stderr %q; want a refusal containing %q", c.name, r.code, r.stderr, c.want)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: refused only after %s", c.name, took)
		}
		if c.name == "none on every interface" {
			if r := svCLI("check-config", cfg); r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("check-config with auth: none on 0.0.0.0: %+v", r)
			}
		}
	}
}

// authServeBriefly runs serve, which must refuse to start, with the
// ceiling: a daemon that hangs at start fails the test instead of holding
// it.
func authServeBriefly(t *testing.T, cfg string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ceiling)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, "serve", "--config", cfg)
	cmd.Env = svEnv()
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("serve --config %s did not return within %s", cfg, ceiling)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}
