package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, wantErr string
	}{
		// Success cases
		{filepath.Join(dir, "w.db"), ""},
		{"file:" + filepath.Join(dir, "w.db") + "?mode=rw", ""},
		{":memory:", ""},
		{"file::memory:?cache=shared", ""},
		{"w.db", ""}, // the working directory

		// Failure cases
		{filepath.Join(dir, "no", "such", "w.db"), "does not exist"},
		{"file:" + filepath.Join(dir, "no", "w.db"), "does not exist"},
		{filepath.Join(notDir, "w.db"), "is not a directory"},
	} {
		err := CheckDir(c.path)
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("CheckDir(%q) = %v, want %q", c.path, err, c.wantErr)
		}
	}
}
