package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestPathWithURICharacters: a database path holding '#', '?' or '%'
// opens that very file, not a path cut at the character.
func TestPathWithURICharacters(t *testing.T) {
	for _, name := range []string{"a#b", "a?b", "a%23b"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "w.db")
		s, err := Open(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.Close()
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: the database is not at %s (%v)", name, p, err)
		}
	}
}
