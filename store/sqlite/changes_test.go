package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestChangesTellsEveryWritersCommit: the change signal wakes its reader
// for another handle's commit (another process's, as far as this handle
// can tell) and for its own, and stays silent while nothing is written:
// the live view syncs on it instead of polling.
func TestChangesTellsEveryWritersCommit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.db")
	reader, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	ch := reader.Changes()
	if ch == nil {
		t.Skip("no inotify on this system: the view polls")
	}
	drain := func() {
		for {
			select {
			case <-ch:
			default:
				return
			}
		}
	}
	told := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(time.Minute): // a ceiling, not a budget: the event comes in microseconds
			t.Fatalf("%s: no change told", what)
		}
	}
	drain()
	if err := writer.MarkDaemon(ctx, "h1", time.Now()); err != nil {
		t.Fatal(err)
	}
	told("another handle's commit")
	drain()
	if err := reader.MarkDaemon(ctx, "h2", time.Now()); err != nil {
		t.Fatal(err)
	}
	told("its own commit")

	// Quiet: reads tell nothing. A third handle starts watching after
	// every write above has returned (so none of theirs is pending for
	// it), then only reads.
	quiet, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	qch := quiet.Changes()
	for range 20 {
		if _, err := quiet.DataVersion(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := quiet.DaemonHosts(ctx, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing was written, so nothing may be pending. (Asked without
	// waiting: it cannot fail for a slow machine, only for a read that
	// was told.)
	select {
	case <-qch:
		t.Fatal("reads were told as a change")
	default:
	}
	if err := quiet.MarkDaemon(ctx, "h3", time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-qch:
	case <-time.After(time.Minute):
		t.Fatal("the quiet handle's own commit: no change told")
	}
}

// An in-memory store has no file to watch: no signal, the reader polls.
func TestChangesNoneInMemory(t *testing.T) {
	s, err := Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Changes() != nil {
		t.Fatal("an in-memory store handed out a change signal")
	}
}
