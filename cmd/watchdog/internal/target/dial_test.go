package target

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFindTokenOnlyForLoopback: this host's token files (beside the
// database, under /var/lib) go only to a daemon on loopback; a remote
// --server gets a token only when WATCHDOG_TOKEN_FILE names one. No
// request is sent: this is the lookup alone.
func TestFindTokenOnlyForLoopback(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "watchdog.token"), []byte("local-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WATCHDOG_TOKEN_FILE", "")
	t.Setenv("WATCHDOG_DB", filepath.Join(dir, "watchdog.db"))
	for _, c := range []struct {
		server string
		want   string
	}{
		{"http://127.0.0.1:9715", "local-secret"},
		{"127.0.0.1:9715", "local-secret"},
		{"http://localhost:9715/", "local-secret"},
		{"http://[::1]:9715", "local-secret"},
		{"https://watchdog.example.com", ""},
		{"http://192.0.2.7:9715", ""}, // TEST-NET-1: never contacted
		{"watchdog.example.com:9715", ""},
	} {
		tok, where, err := findToken(c.server)
		if err != nil || tok != c.want {
			t.Errorf("findToken(%q) = %q (%s, %v), want %q", c.server, tok, where, err, c.want)
		}
	}
	// Named explicitly, a token file is sent wherever the user points.
	t.Setenv("WATCHDOG_TOKEN_FILE", filepath.Join(dir, "watchdog.token"))
	if tok, _, err := findToken("https://watchdog.example.com"); err != nil || tok != "local-secret" {
		t.Errorf("with WATCHDOG_TOKEN_FILE: %q, %v", tok, err)
	}
}
