package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// built is the watchdog binary of this test process, built at most once.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// BuildBinary builds ./cmd/watchdog once per test process, into a
// temporary directory, and returns its path; later calls return the same
// binary (or the same error, which carries the compiler's output). For a
// TestMain, which has no *testing.T; tests call Binary. A TestMain that
// builds it calls RemoveBinary after m.Run.
func BuildBinary() (string, error) {
	built.once.Do(func() {
		built.path, built.err = build()
	})
	return built.path, built.err
}

func build() (string, error) {
	// `go env GOMOD` finds the module from any package's directory, which
	// is where `go test` runs a test binary.
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	dir, err := os.MkdirTemp("", "watchdog-bin-")
	if err != nil {
		return "", fmt.Errorf("make a directory for the watchdog binary: %w", err)
	}
	built.dir = dir
	path := filepath.Join(dir, "watchdog")
	// The CLI looks for the daemon's config at /etc/watchdog/config.yaml
	// when neither --config nor WATCHDOG_CONFIG names one; the tests'
	// binary looks at NoConfig's path instead, so no test reads the host's
	// real file by accident.
	cmd := exec.Command("go", "build", "-ldflags", "-X main.defaultConfigPath="+filepath.Join(dir, NoConfig), "-o", path, "./cmd/watchdog")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/watchdog in %s: %w\n%s", root, err, out.Bytes())
	}
	return path, nil
}

// NoConfig names, in the directory of the binary BuildBinary makes, the
// file the binary takes for the daemon's default config path: a file
// that never exists, so the binary's commands resolve no config unless a
// test names one (--config, WATCHDOG_CONFIG).
const NoConfig = "no-daemon-config.yaml"

// Binary is the watchdog binary built by BuildBinary; a module that does
// not build fails t with the compiler's output.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := BuildBinary()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// RemoveBinary deletes the binary BuildBinary made, if any; a TestMain
// calls it after m.Run, since the binary outlives every single test.
func RemoveBinary() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
