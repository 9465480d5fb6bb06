package tokenfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	good := write("good", "s3cret\n", 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		path    string
		want    string // the token, when it is read
		loose   bool
		wantErr string
	}{
		// Success cases
		{name: "one line", path: good, want: "s3cret"},
		{name: "no newline", path: write("bare", "tok", 0o600), want: "tok"},
		{name: "CRLF", path: write("crlf", "tok\r\n", 0o600), want: "tok"},
		{name: "surrounding blanks", path: write("blanks", "  tok \n", 0o600), want: "tok"},
		{name: "group readable", path: write("loose", "tok\n", 0o640), want: "tok", loose: true},

		// Failure cases
		{name: "missing", path: filepath.Join(dir, "absent"), wantErr: "no such file"},
		{name: "empty", path: write("empty", "", 0o600), wantErr: "is empty"},
		{name: "blank line", path: write("blank", " \n", 0o600), wantErr: "is empty"},
		{name: "two lines", path: write("two", "tok\nother\n", 0o600), wantErr: "more than one line"},
		{name: "trailing blank line", path: write("twonl", "tok\n\n", 0o600), wantErr: "more than one line"},
		{name: "space inside", path: write("space", "to k\n", 0o600), wantErr: "cannot be sent in an HTTP header"},
		{name: "too big", path: write("big", strings.Repeat("a", MaxSize+1), 0o600), wantErr: "over 4096 bytes"},
		{name: "FIFO", path: fifo, wantErr: "not a regular file (a FIFO)"},
		{name: "/dev/zero", path: "/dev/zero", wantErr: "not a regular file (a character device)"},
		{name: "directory", path: dir, wantErr: "not a regular file (a directory)"},
		{name: "symlink", path: link, wantErr: "is a symlink"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A ceiling for a Read that must not block (a FIFO with no
			// writer), generous: a loaded machine only makes it slower.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			type result struct {
				f   File
				err error
			}
			done := make(chan result, 1)
			go func() {
				f, err := Read(c.path)
				done <- result{f, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-ctx.Done():
				t.Fatalf("Read(%s) did not return within 2m", c.path)
			}
			if c.wantErr != "" {
				if r.err == nil || !strings.Contains(r.err.Error(), c.wantErr) {
					t.Fatalf("Read(%s) = %+v, %v; want an error containing %q", c.path, r.f, r.err, c.wantErr)
				}
				if !strings.Contains(r.err.Error(), c.path) {
					t.Errorf("error %q does not name the file", r.err)
				}
				return
			}
			if r.err != nil || r.f.Token != c.want || r.f.Loose() != c.loose {
				t.Fatalf("Read(%s) = %+v (loose %t), %v; want %q, loose %t", c.path, r.f, r.f.Loose(), r.err, c.want, c.loose)
			}
		})
	}
}

func TestEnsureCreatesOnceAndReuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, Name)
	f, created, err := Ensure(p)
	if err != nil || !created {
		t.Fatalf("Ensure = %+v, %t, %v; want a new file", f, created, err)
	}
	if len(f.Token) != 2*tokenBytes {
		t.Errorf("token %q: want %d hex characters", f.Token, 2*tokenBytes)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Errorf("mode %s, want a regular file with -rw-------", fi.Mode())
	}
	again, created, err := Ensure(p)
	if err != nil || created || again.Token != f.Token {
		t.Fatalf("second Ensure = %+v, %t, %v; want the same token, not created", again, created, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s (temporary files removed)", len(entries), Name)
	}
}

func TestEnsureConcurrentCallersAgree(t *testing.T) {
	p := filepath.Join(t.TempDir(), Name)
	const n = 8
	toks := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f, _, err := Ensure(p)
			toks[i], errs[i] = f.Token, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || toks[i] != toks[0] {
			t.Fatalf("caller %d: %q, %v; caller 0: %q", i, toks[i], errs[i], toks[0])
		}
	}
}

func TestEnsureNeverReplacesOrFollows(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	for _, c := range []struct {
		name    string
		setup   func(p string)
		wantErr string
	}{
		{"broken file", func(p string) { os.WriteFile(p, []byte("a\nb\n"), 0o600) }, "more than one line"},
		{"empty file", func(p string) { os.WriteFile(p, nil, 0o600) }, "is empty"},
		{"dangling symlink", func(p string) { os.Symlink(target, p) }, "is a symlink"},
		{"fifo", func(p string) { syscall.Mkfifo(p, 0o600) }, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), Name)
			c.setup(p)
			before, _ := os.Lstat(p)
			if _, _, err := Ensure(p); err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Ensure: %v, want an error containing %q", err, c.wantErr)
			}
			after, _ := os.Lstat(p)
			if !os.SameFile(before, after) || before.Size() != after.Size() {
				t.Error("Ensure replaced the existing file")
			}
			if _, err := os.Lstat(target); err == nil {
				t.Error("Ensure created the symlink's target")
			}
		})
	}
}

func TestBesideDatabase(t *testing.T) {
	for _, c := range []struct{ db, want string }{
		{"./watchdog.db", "watchdog.token"},
		{"/var/lib/watchdog/watchdog.db", "/var/lib/watchdog/watchdog.token"},
		{"state.db", "watchdog.token"},
		{"file:/srv/wd/state.db?mode=rwc", "/srv/wd/watchdog.token"},
	} {
		if got := BesideDatabase(c.db); got != c.want {
			t.Errorf("BesideDatabase(%q) = %q, want %q", c.db, got, c.want)
		}
	}
}

// TestEnsureRefusesAPlantedToken: a token file beside the database that
// another user owns (planted in a shared directory) is refused, not used.
func TestEnsureRefusesAPlantedToken(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	path := filepath.Join(t.TempDir(), "watchdog.token")
	if err := os.WriteFile(path, []byte("planted-by-someone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Skipf("chown: %v", err)
	}
	f, _, err := Ensure(path)
	if err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Fatalf("Ensure(planted) = %+v, %v; want a refusal naming the owner", f, err)
	}
	// Read, for a file the user named, does not judge its owner.
	if f, err := Read(path); err != nil || f.Token != "planted-by-someone" || f.UID != 65534 {
		t.Errorf("Read = %+v, %v", f, err)
	}
}

// TestFind: which files, in which order, and this host's files only for
// a server on loopback. No request is sent: this is the lookup alone.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	beside := write(Name, "local-secret\n")
	named := write("named", "named-secret\n")
	db := filepath.Join(dir, "watchdog.db")
	empty := t.TempDir() // no token beside a database here
	_, systemErr := os.Stat(SystemPath)
	for _, c := range []struct {
		name      string
		env       string
		server    string
		db        string
		want      string
		wantWhere string
		wantErr   string
	}{
		// Success cases
		{name: "loopback IP", server: "http://127.0.0.1:9715", db: db, want: "local-secret", wantWhere: "token from " + beside},
		{name: "bare host:port", server: "127.0.0.1:9715", db: db, want: "local-secret"},
		{name: "localhost", server: "http://localhost:9715/", db: db, want: "local-secret"},
		{name: "IPv6 loopback", server: "http://[::1]:9715", db: db, want: "local-secret"},
		{name: "file: URI database", server: "127.0.0.1:9715", db: "file:" + db + "?mode=rw", want: "local-secret"},
		{name: "named file, remote server", env: named, server: "https://watchdog.example.com", db: db, want: "named-secret", wantWhere: "token from WATCHDOG_TOKEN_FILE=" + named},
		{name: "named file wins over the database's", env: named, server: "127.0.0.1:9715", db: db, want: "named-secret"},

		// No token, no error
		{name: "remote name", server: "https://watchdog.example.com", db: db, wantWhere: "no token sent (WATCHDOG_TOKEN_FILE unset; this host's own token files are sent only to a daemon on loopback)"},
		{name: "remote IP", server: "http://192.0.2.7:9715", db: db}, // TEST-NET-1: never contacted
		{name: "remote bare host:port", server: "watchdog.example.com:9715", db: db},

		// Failure cases
		{name: "named file missing", env: filepath.Join(dir, "absent"), server: "127.0.0.1:9715", db: db, wantErr: "WATCHDOG_TOKEN_FILE: token file: open"},
		{name: "named file empty", env: write("empty", ""), server: "127.0.0.1:9715", db: db, wantErr: "WATCHDOG_TOKEN_FILE: token file " + filepath.Join(dir, "empty") + " is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvFile, c.env)
			tok, where, err := Find(c.server, c.db)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Find = %q, %v; want an error containing %q", tok, err, c.wantErr)
				}
				return
			}
			if err != nil || tok != c.want {
				t.Fatalf("Find(%q, %q) = %q (%s), %v; want %q", c.server, c.db, tok, where, err, c.want)
			}
			if c.wantWhere != "" && where != c.wantWhere {
				t.Errorf("where = %q, want %q", where, c.wantWhere)
			}
		})
	}
	// Nothing beside the database: the next place is the system's file,
	// and where names both (when the system's file is absent here too).
	t.Setenv(EnvFile, "")
	tok, where, err := Find("127.0.0.1:9715", filepath.Join(empty, "watchdog.db"))
	if os.IsNotExist(systemErr) {
		want := "no token found (WATCHDOG_TOKEN_FILE unset; looked in " + filepath.Join(empty, Name) + " (absent), " + SystemPath + " (absent))"
		if err != nil || tok != "" || where != want {
			t.Errorf("Find with no file = %q, %q, %v; want where %q", tok, where, err, want)
		}
	}
	// A token file that is there but broken is skipped, and named.
	write2 := filepath.Join(empty, Name)
	if err := os.WriteFile(write2, []byte("a\nb\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, where, err := Find("127.0.0.1:9715", filepath.Join(empty, "watchdog.db")); err != nil || !strings.Contains(where, write2+" (token file "+write2+" holds more than one line") {
		t.Errorf("a broken file beside the database: where %q, %v", where, err)
	}
}
