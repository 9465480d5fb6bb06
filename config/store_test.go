package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPostgresStore: a postgres store with a token file, or with auth:
// none on loopback, loads as written.
func TestPostgresStore(t *testing.T) {
	for _, tc := range []struct {
		name, auth string
	}{
		{"token file", "auth:\n  token_file: /etc/watchdog/token\n"},
		{"auth none", "auth: none\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			body := "store:\n  driver: postgres\n  dsn: postgresql://watchdog:secret@db.example.org:5432/watchdog?sslmode=verify-full\n" + tc.auth
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Store.Driver != "postgres" || c.Store.DSN != "postgresql://watchdog:secret@db.example.org:5432/watchdog?sslmode=verify-full" {
				t.Errorf("store %+v", c.Store)
			}
		})
	}
}
