package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"watchdog/store"
)

// sqliteErr returns the real error SQLite gives for what do does on a
// scratch database (the driver's errors cannot be built by hand).
func sqliteErr(t *testing.T, dsn string, do func(*sql.DB) error) error {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = do(db)
	if err == nil {
		t.Fatalf("%s: no error", dsn)
	}
	return err
}

// TestClassify: the one rule both drivers' errors go through. The drivers'
// own marks win; a read's unclassified SQLite error that says the store
// cannot be used now is "not written"; anything else is a fault.
func TestClassify(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro.db")
	if err := sqliteErr(t, ro, func(db *sql.DB) error {
		_, err := db.Exec("CREATE TABLE t (x INTEGER PRIMARY KEY)")
		if err == nil {
			err = errors.New("created")
		}
		return err
	}); err.Error() != "created" {
		t.Fatal(err)
	}
	cantOpen := sqliteErr(t, "file:"+filepath.Join(dir, "no", "such", "dir.db")+"?mode=rw", func(db *sql.DB) error {
		return db.Ping()
	})
	readOnly := sqliteErr(t, "file:"+ro+"?mode=ro", func(db *sql.DB) error {
		_, err := db.Exec("INSERT INTO t VALUES (1)")
		return err
	})
	constraint := sqliteErr(t, filepath.Join(dir, "c.db"), func(db *sql.DB) error {
		if _, err := db.Exec("CREATE TABLE t (x INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)"); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		_, err := db.Exec("INSERT INTO t VALUES (1)")
		return err
	})
	tests := []struct {
		name string
		err  error
		want store.Failure
	}{
		{"nil", nil, store.FailureFault},
		{"a driver's not-written mark", fmt.Errorf("register x: %w", fmt.Errorf("%w: server gone", store.ErrUnavailable)), store.FailureNotWritten},
		{"a driver's outcome-unknown mark", fmt.Errorf("register x: %w", lostDuring(errors.New("deleted"))), store.FailureOutcomeUnknown},
		{"outcome unknown wins over not written", errors.Join(store.ErrUnavailable, store.ErrOutcomeUnknown), store.FailureOutcomeUnknown},
		{"a read that cannot open the database (no descriptor left)", fmt.Errorf("read entity: %w", cantOpen), store.FailureNotWritten},
		{"a read-only database", readOnly, store.FailureNotWritten},
		{"a constraint: watchdog's own fault", constraint, store.FailureFault},
		{"not found is the caller's, not the store's availability", fmt.Errorf("x: %w", store.ErrNotFound), store.FailureFault},
		{"anything else", errors.New("boom"), store.FailureFault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

// TestLostDuringWriteIsOutcomeUnknown: a database deleted while a write
// transaction runs takes the commit into the lost file: the write is
// neither acknowledged nor called "not written" (it is in the rescued
// copy), for a lone write and for a group commit alike. A write after the
// loss was latched is "not written", and is not in the copy.
func TestLostDuringWriteIsOutcomeUnknown(t *testing.T) {
	tests := []struct {
		name  string
		write func(s *Store, path string) error
	}{
		{"writeTx", func(s *Store, path string) error {
			ctx := context.Background()
			return s.writeTx(ctx, func() error {
				removeStore(path)
				_, err := s.exec(ctx, "UPDATE entities SET label = 'during' WHERE id = 'e'")
				return err
			})
		}},
		{"group commit", func(s *Store, path string) error {
			return s.groupWrite(context.Background(), "label e", func(ctx context.Context, tx *sql.Tx) error {
				removeStore(path)
				_, err := s.txExec(ctx, tx, "UPDATE entities SET label = 'during' WHERE id = 'e'")
				return err
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, path := openTest(t)
			if err := register(ctx, s, "e"); err != nil {
				t.Fatal(err)
			}
			err := tt.write(s, path)
			if store.Classify(err) != store.FailureOutcomeUnknown || errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("write during the loss: %v (%s), want outcome unknown and not store.ErrUnavailable", err, store.Classify(err))
			}
			after := register(ctx, s, "after")
			if store.Classify(after) != store.FailureNotWritten {
				t.Fatalf("write after the loss: %v (%s), want not written", after, store.Classify(after))
			}
			copyPath, err := s.Rescue(ctx, unixAt(1e9))
			if err != nil {
				t.Fatal(err)
			}
			h, err := sql.Open("sqlite", "file:"+copyPath+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			var label string
			if err := h.QueryRow("SELECT label FROM entities WHERE id = 'e'").Scan(&label); err != nil || label != "during" {
				t.Errorf("the rescued copy has label %q (%v): the outcome-unknown write went into the lost file", label, err)
			}
			var n int
			if err := h.QueryRow("SELECT COUNT(*) FROM entities WHERE id = 'after'").Scan(&n); err != nil || n != 0 {
				t.Errorf("the not-written write is in the rescued copy (%d rows, %v)", n, err)
			}
		})
	}
}

func removeStore(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// TestReserveHysteresis: below shortBelow the store refuses every write
// (the probe's too), and it takes writes again only once
// shortBelow+reserveMargin are free, so that its own writes cannot eat
// what an operator frees a little at a time. A write refused for space
// wrote nothing.
func TestReserveHysteresis(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var mu sync.Mutex
	free := uint64(10 << 20)
	s.health.free = func(string) (uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		return free, nil
	}
	steps := []struct {
		name     string
		free     uint64
		writable bool
	}{
		{"plenty", 10 << 20, true},
		{"just above the threshold", shortBelow, true},
		{"below the threshold", shortBelow - 1, false},
		{"freed a little: above the threshold, under the margin", shortBelow + reserveMargin/2, false},
		{"one byte short of threshold+margin", shortBelow + reserveMargin - 1, false},
		{"threshold+margin", shortBelow + reserveMargin, true},
		{"back between threshold and margin: writable (no longer short)", shortBelow + reserveMargin/2, true},
	}
	for i, st := range steps {
		mu.Lock()
		free = st.free
		mu.Unlock()
		perr := s.CheckWrite(ctx)
		id := fmt.Sprintf("w%d", i)
		werr := register(ctx, s, id)
		if st.writable {
			if perr != nil || werr != nil {
				t.Fatalf("%s (%d free): probe %v, write %v; want both to pass", st.name, st.free, perr, werr)
			}
			continue
		}
		if !errors.Is(perr, store.ErrShortOfSpace) || store.Classify(perr) != store.FailureNotWritten {
			t.Fatalf("%s (%d free): probe %v, want ErrShortOfSpace, not written", st.name, st.free, perr)
		}
		if !errors.Is(werr, store.ErrShortOfSpace) || store.Classify(werr) != store.FailureNotWritten {
			t.Fatalf("%s (%d free): write %v, want ErrShortOfSpace, not written", st.name, st.free, werr)
		}
		if _, err := s.Get(ctx, "session", id); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: the refused write is in the store (%v)", st.name, err)
		}
	}
}
