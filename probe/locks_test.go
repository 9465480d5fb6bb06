package probe

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCheckLocks(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, ".lock")
	touch(t, held, time.Now())
	touch(t, filepath.Join(dir, "other.lock"), time.Now())
	dangling := filepath.Join(dir, "dangling.lock")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}

	o := CheckLocks(dir, []string{
		held,                            // present
		filepath.Join(dir, "gone.lock"), // absent
		"*.lock",                        // a literal name, not a pattern: absent
		"dangling.lock",                 // relative to the root; a dangling symlink is still a lock
	})
	if len(o.Errors) != 0 {
		t.Fatalf("errors: %v", o.Errors)
	}
	if len(o.Present) != 2 || o.Present[0].Path != held || o.Present[1].Path != dangling {
		t.Fatalf("present %+v, want %s and %s", o.Present, held, dangling)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("the lock was touched: %v", err)
	}

	o = CheckLocks("", []string{"relative.lock"})
	if len(o.Present) != 0 || len(o.Errors) != 1 {
		t.Errorf("relative lock without root: %+v", o)
	}
}
