// Package tokenfile reads and creates the API's bearer token file for the
// daemon and the CLI, so both refuse the same files in the same words: a
// regular file of at most MaxSize bytes holding one printable line (a FIFO
// or device could block or feed the reader forever).
package tokenfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"watchdog/config"
)

// Name is the token file the daemon creates beside its database by default.
const Name = "watchdog.token"

// SystemPath is where the packaged daemon keeps its own token.
const SystemPath = "/var/lib/watchdog/" + Name

// EnvFile is the environment variable naming the token file a client sends.
const EnvFile = "WATCHDOG_TOKEN_FILE"

// MaxSize bounds what is read of a token file: a token is one short line.
const MaxSize = 4096

// tokenBytes is the generated token's entropy, hex-encoded.
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

// Loose reports whether group or others may read or write the credential.
func (f File) Loose() bool { return f.Mode.Perm()&0o077 != 0 }

// Read reads the token file at path without blocking on a FIFO, following
// a final symlink or reading past MaxSize; missing wraps fs.ErrNotExist.
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

// parse returns the one line of data; its error reads after the file's name.
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

// Ensure returns the token in the file at path, creating it (random, 0600)
// when absent. It is hard-linked into place from a temporary name, so no
// reader sees half a token, racing daemons agree on one, and nothing at
// path is replaced or followed. A broken file is an error, never
// regenerated (clients hold the old token); one owned by another user was
// planted, and is refused: its author would hold the key to every write.
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
			// Another process created it meanwhile: use it, if ours to use.
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

// BesideDatabase is where the daemon keeps its token for SQLite file dbPath.
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

// Find looks for the bearer token a client sends to server: the file
// $WATCHDOG_TOKEN_FILE names (any problem an error), else Name beside the
// database, else SystemPath (docs/reference/cli.md). The last two are this
// host's daemon's key, read only for a server on loopback; unreadable ones
// are skipped but named in where, which a 401 prints. No token is not an
// error (auth: none). Loose permissions are the daemon's to warn about.
func Find(server, dbPath string) (tok, where string, err error) {
	if p := os.Getenv(EnvFile); p != "" {
		f, err := Read(p)
		if err != nil {
			// Name the variable: it is what the user has to fix.
			return "", "", fmt.Errorf("%s: %w", EnvFile, err)
		}
		return f.Token, "token from " + EnvFile + "=" + p, nil
	}
	if !loopbackServer(server) {
		return "", "no token sent (" + EnvFile + " unset; this host's own token files are sent only to a daemon on loopback)", nil
	}
	var tried []string
	for _, p := range []string{BesideDatabase(dbPath), SystemPath} {
		f, err := Read(p)
		switch {
		case err == nil:
			return f.Token, "token from " + p, nil
		case errors.Is(err, fs.ErrNotExist):
			tried = append(tried, p+" (absent)")
		default:
			tried = append(tried, p+" ("+strings.TrimPrefix(err.Error(), "token file: ")+")")
		}
	}
	return "", "no token found (" + EnvFile + " unset; looked in " + strings.Join(tried, ", ") + ")", nil
}

// loopbackServer reports whether a --server value names this host's loopback.
func loopbackServer(server string) bool {
	s := strings.TrimSpace(server)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	return err == nil && config.IsLoopback(u.Hostname())
}
