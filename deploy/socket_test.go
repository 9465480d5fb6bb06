package deploy

import (
	"os"
	"strings"
	"testing"

	"watchdog/config"
)

// TestUnitMakesTheSocketsDirectory: the unit (and so the Debian package,
// which ships it) makes /run/watchdog for the daemon's local socket,
// owned by the service user and searchable by every user, and runs with
// true uids (no private user namespace: SO_PEERCRED and /proc would say
// nobody); under it the daemon's default socket is /run/watchdog/api.sock,
// where the command line looks (docs/security.md).
func TestUnitMakesTheSocketsDirectory(t *testing.T) {
	b, err := os.ReadFile("systemd/watchdog.service")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
			set[k] = v
		}
	}
	for k, want := range map[string]string{"RuntimeDirectory": "watchdog", "RuntimeDirectoryMode": "0755", "PrivateUsers": "no", "User": "watchdog"} {
		if set[k] != want {
			t.Errorf("%s=%q, want %q", k, set[k], want)
		}
	}
	cfg, err := config.Load("config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNTIME_DIRECTORY", "/run/watchdog")
	if got := cfg.UnixSocket(); got != "/run/watchdog/api.sock" {
		t.Errorf("the socket under the unit: %q, want /run/watchdog/api.sock", got)
	}
}
