package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain points the daemon's default config path at a file that never
// exists, as internal/testenv.BuildBinary does for the built binary: the
// in-process tests of the commands (run, newProbeCmd) never read the
// host's real /etc/watchdog/config.yaml. The end-to-end tests of the
// built binary are in test/e2e.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "watchdog-cmd-test-")
	if err != nil {
		panic("make a directory for the absent default config: " + err.Error())
	}
	defaultConfigPath = filepath.Join(dir, "no-daemon-config.yaml")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
