package store

import (
	"context"
	"strings"
	"testing"
)

// TestOpenByDriver: Open finds a driver only through the registry, and
// says which is missing; a PostgreSQL URL given to the SQLite driver is
// refused before any driver is asked (the config's most likely slip).
func TestOpenByDriver(t *testing.T) {
	ctx := context.Background()
	if _, err := Open(ctx, "no-such-driver", "x"); err == nil || !strings.Contains(err.Error(), `"no-such-driver" is not built in`) {
		t.Errorf("unknown driver: %v", err)
	}
	if _, err := Open(ctx, "", "postgres://u:secret@h/db"); err == nil || !strings.Contains(err.Error(), "set store.driver: postgres") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a PostgreSQL URL for sqlite: %v", err)
	}
	opened := ""
	t.Cleanup(func() {
		driversMu.Lock()
		delete(drivers, "test-driver")
		driversMu.Unlock()
	})
	Register("test-driver", Driver{Open: func(_ context.Context, dsn string) (Backend, error) {
		opened = dsn
		return nil, nil
	}})
	if _, err := Open(ctx, "test-driver", "dsn-1"); err != nil || opened != "dsn-1" {
		t.Errorf("registered driver: opened %q, err %v", opened, err)
	}
}
