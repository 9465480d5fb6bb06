// Package tokenfile reads and creates the API's bearer token file, for the
// daemon (auth.token_file, or the token it generates beside its database)
// and the CLI (WATCHDOG_TOKEN_FILE, or the daemon's file found beside the
// database): one reader, so both refuse the same files in the same words.
//
// A token file is a regular file of at most MaxSize bytes holding exactly
// one non-empty line of printable ASCII. Anything else is an error naming
// the file and the problem: a FIFO or a device (which could block the
// reader or feed it without end), a symlink as the file itself, an empty
// file, a second line (a token that nobody could send in one header).
package tokenfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Name is the file the daemon creates beside its database when no
// auth.token_file is configured, and where the CLI looks for it.
const Name = "watchdog.token"

// MaxSize bounds what is read of a token file: a token is one short line.
const MaxSize = 4096

// tokenBytes is the generated token's entropy (hex-encoded, so twice as
// many characters).
const tokenBytes = 32

// File is a token file as read.
type File struct {
	// Path is the file read.
	Path string
	// Token is its one line, without the line ending.
	Token string
	// Mode is its permission bits.
	Mode fs.FileMode
	// UID owns the file (-1 where the system does not say).
	UID int
}

// Loose reports whether the file is readable or writable by group or
// others, which the callers warn about: the token is a credential.
func (f File) Loose() bool { return f.Mode.Perm()&0o077 != 0 }

// Read reads the token file at path. It never blocks on a FIFO and never
// reads more than MaxSize bytes: the file is opened non-blocking without
// following a final symlink, and refused unless fstat says it is a regular
// file. A missing file is an error wrapping fs.ErrNotExist.
func Read(path string) (File, error) {
	if path == "" {
		return File{}, errors.New("token file: empty path")
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return File{}, fmt.Errorf("token file %s is a symlink; name the file itself", path)
		}
		return File{}, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return File{}, fmt.Errorf("token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("token file %s is not a regular file (%s)", path, kind(fi.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return File{}, fmt.Errorf("token file %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return File{}, fmt.Errorf("token file %s is over %d bytes; it must hold one line, the token", path, MaxSize)
	}
	tok, err := parse(data)
	if err != nil {
		return File{}, fmt.Errorf("token file %s %w", path, err)
	}
	uid := -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid = int(st.Uid)
	}
	return File{Path: path, Token: tok, Mode: fi.Mode(), UID: uid}, nil
}

// parse returns the one line of data. Its error reads after the file's
// name ("token file X " + err).
func parse(data []byte) (string, error) {
	s := string(data)
	s = strings.TrimSuffix(s, "\n")
	s = strings.TrimSuffix(s, "\r")
	if strings.ContainsAny(s, "\r\n") {
		return "", errors.New("holds more than one line; it must hold exactly one, the token")
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("is empty; it must hold one line, the token")
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return "", errors.New("holds a character that cannot be sent in an HTTP header (use printable ASCII without spaces)")
		}
	}
	return s, nil
}

// kind names a non-regular file's type for an error.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "mode " + m.String()
}

// Ensure returns the token in the file at path, creating the file first
// when it does not exist: a random token (crypto/rand, 32 bytes as hex),
// mode 0600. The file is written under a temporary name and hard-linked
// into place, so no reader ever sees a half-written token, two daemons
// racing to create it agree on one, and an existing file or symlink at
// path is never replaced or followed. An existing file must be valid (see
// Read): a broken one is an error to fix, never silently regenerated,
// since the clients holding the old token would all fail. created reports
// whether this call made the file.
//
// An existing file must also belong to this process's user: the daemon
// makes this token itself, so one owned by anybody else was planted (a
// shared working directory, a writable state directory), and its author
// would hold the key to every write.
func Ensure(path string) (f File, created bool, err error) {
	f, err = Read(path)
	if err == nil {
		return f, false, ownedByMe(f)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return f, false, err
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return File{}, false, fmt.Errorf("generate token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".new-*")
	if err != nil {
		return File{}, false, fmt.Errorf("create token file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // after the link, only the name goes
	// CreateTemp makes the file 0600 with O_EXCL: never someone else's.
	if _, err := tmp.WriteString(tok + "\n"); err != nil {
		tmp.Close()
		return File{}, false, fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return File{}, false, fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return File{}, false, fmt.Errorf("write token file %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created it meanwhile: use theirs, if it is
			// ours to use.
			f, err := Read(path)
			if err != nil {
				return f, false, err
			}
			return f, false, ownedByMe(f)
		}
		return File{}, false, fmt.Errorf("create token file %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // the new name survives a power cut; best effort
		d.Close()
	}
	f, err = Read(path)
	return f, err == nil, err
}

// BesideDatabase is where the daemon keeps its generated token for the
// SQLite database at dbPath (a path or a file: URI): Name in the same
// directory.
func BesideDatabase(dbPath string) string {
	p := dbPath
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		p, _, _ = strings.Cut(rest, "?")
	}
	return filepath.Join(filepath.Dir(p), Name)
}

// ownedByMe refuses a self-managed token file that another user owns.
func ownedByMe(f File) error {
	if me := os.Geteuid(); f.UID >= 0 && f.UID != me {
		return fmt.Errorf("token file %s belongs to uid %d, not to this daemon (uid %d), so someone else may know the token: remove it (the daemon then makes its own) or name a file with auth.token_file", f.Path, f.UID, me)
	}
	return nil
}
