package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDaemonLockHeld reads the lock as the CLI does, beside a real lock
// taken and released in this process: held while held, not after, for
// the plain lock and a host's; unknowable without a file.
func TestDaemonLockHeld(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	db := filepath.Join(t.TempDir(), "w.db")
	if held, known := DaemonLockHeld(db); held || !known {
		t.Errorf("no lock file yet: held %v known %v, want false true", held, known)
	}
	for _, host := range []string{"", "host-a", "a host/with a slash"} {
		lock, err := LockDaemonHost(db, host)
		if err != nil {
			t.Fatal(err)
		}
		if held, known := DaemonLockHeld(db); !held || !known {
			t.Errorf("host %q holds it: held %v known %v", host, held, known)
		}
		if held, _ := DaemonLockHeld("file:" + db + "?_pragma=busy_timeout(5000)"); !held {
			t.Errorf("host %q holds it, read through a file: URI: not held", host)
		}
		if err := lock.Release(); err != nil {
			t.Fatal(err)
		}
		if held, known := DaemonLockHeld(db); held || !known {
			t.Errorf("host %q released it: held %v known %v", host, held, known)
		}
	}
	// A lock file of another database with the same prefix is not this one's.
	other, err := LockDaemon(db + "x")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if held, _ := DaemonLockHeld(db); held {
		t.Error("the lock of " + db + "x counted as " + db + "'s")
	}
	for _, p := range []string{"postgres://u@h/db", ":memory:"} {
		if _, known := DaemonLockHeld(p); known {
			t.Errorf("%s: known, want unknowable", p)
		}
	}
}

// TestFlockHeld reads lines of the kernel's table: a holder by device and
// inode, a holder on a stacked file system by inode and the pid written
// in the file, never a waiter or a POSIX lock.
func TestFlockHeld(t *testing.T) {
	l := lockFile{dev: uint64(0xfe<<8 | 0x01), ino: 9982412, owner: "4242"}
	cases := []struct {
		line string
		want bool
	}{
		{"1: FLOCK  ADVISORY  WRITE 4242 fe:01:9982412 0 EOF", true},
		{"1: FLOCK  ADVISORY  WRITE 17 fe:01:9982412 0 EOF", true},
		{"1: FLOCK  ADVISORY  WRITE 4242 00:2f:9982412 0 EOF", true},
		{"1: FLOCK  ADVISORY  WRITE 17 00:2f:9982412 0 EOF", false},
		{"1: -> FLOCK  ADVISORY  WRITE 4242 fe:01:9982412 0 EOF", false},
		{"1: POSIX  ADVISORY  WRITE 4242 fe:01:9982412 0 EOF", false},
		{"1: FLOCK  ADVISORY  WRITE 4242 fe:01:9982413 0 EOF", false},
		{"garbage", false},
	}
	for _, c := range cases {
		if got := flockHeld([]byte("0: POSIX  ADVISORY  READ 1 fe:01:1 0 EOF\n"+c.line+"\n"), l); got != c.want {
			t.Errorf("%q: %v, want %v", c.line, got, c.want)
		}
	}
}
