package archtest

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// databaseLibraries are the modules only the store drivers may link:
// watchdog/store/sqlite's and watchdog/store/postgres's.
var databaseLibraries = []string{"modernc.org/sqlite", "github.com/jackc/pgx"}

// TestNoDatabaseWithoutADriver: the CLI's HTTP client, and package store
// itself (the interface and the rows every consumer reads), link no
// database library. The client reaches store through attention; a store
// root that held a driver would pull SQLite into every program that only
// talks to a daemon. The whole dependency graph counts, not just direct
// imports: an edge anywhere below is enough to link it.
func TestNoDatabaseWithoutADriver(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range []string{"./cmd/watchdog/internal/client", "./store"} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
		}
		deps := strings.Fields(string(out))
		if len(deps) < 5 {
			t.Fatalf("go list -deps %s listed only %q: the check would pass vacuously", pkg, deps)
		}
		for _, dep := range deps {
			for _, lib := range databaseLibraries {
				if dep == lib || strings.HasPrefix(dep, lib+"/") {
					t.Errorf("%s links %s (a store driver's library): find the import edge that reaches it (go list -deps -f '{{.ImportPath}}: {{.Imports}}' %s)", pkg, dep, pkg)
				}
			}
		}
	}
}

// TestDriversLinkTheirLibrary keeps TestNoDatabaseWithoutADriver honest:
// the names it looks for are the ones the drivers really link.
func TestDriversLinkTheirLibrary(t *testing.T) {
	root := moduleRoot(t)
	for pkg, lib := range map[string]string{"./store/sqlite": "modernc.org/sqlite", "./store/postgres": "github.com/jackc/pgx"} {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if !strings.Contains(string(out), lib) {
			t.Errorf("%s does not link %s: TestNoDatabaseWithoutADriver looks for the wrong name", pkg, lib)
		}
	}
}
