package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDir reports a database at path (a path or a file: URI) whose
// directory is missing or is not a directory: the store would not open
// there, and neither could the daemon's lock or its own token file beside
// it. An in-memory database has no directory and passes. Only the
// directory is checked: the file itself is created on first open.
func CheckDir(path string) error {
	file := FilePath(path)
	if file == "" {
		return nil
	}
	dir := filepath.Dir(file)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store %s: its directory %s does not exist (create it, or set store.dsn)", file, dir)
	case err != nil:
		return fmt.Errorf("store %s: %w", file, err)
	case !fi.IsDir():
		return fmt.Errorf("store %s: %s is not a directory", file, dir)
	}
	return nil
}
