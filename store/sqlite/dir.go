package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// CheckDir reports a database at path whose directory is missing or not a
// directory (the store, lock and token file could not live there).
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
