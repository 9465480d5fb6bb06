package testenv

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv names an existing PostgreSQL server for the tests, as a URL
// whose user may CREATE DATABASE: each test gets a fresh database of its
// own there, dropped at its end. Unset, the tests start a throwaway
// cluster of their own (see Postgres).
const PostgresEnv = "WATCHDOG_TEST_PG_DSN"

// pgCluster is the server this test process uses: one for the whole
// process, started at the first test that asks.
var pgCluster struct {
	once sync.Once
	err  error
	// admin is the URL of its maintenance database (postgres).
	admin string
	// cmd and dir are set when this process started it.
	cmd *exec.Cmd
	dir string
	n   atomic.Int64
}

// Postgres returns the URL of a new, empty database for t on the test
// server, dropped when t ends. Without WATCHDOG_TEST_PG_DSN the server is a
// throwaway cluster of this test process: the Debian PostgreSQL binaries
// (package postgresql; make test installs it) run initdb into a temporary
// directory as an unprivileged user, and the server listens only on a
// unix socket in that directory, fsync on. A package using it stops the
// cluster at its end with PostgresMain.
func Postgres(t testing.TB) string {
	t.Helper()
	pgCluster.once.Do(func() {
		if dsn := os.Getenv(PostgresEnv); dsn != "" {
			pgCluster.admin = dsn
			return
		}
		pgCluster.err = startCluster()
	})
	if pgCluster.err != nil {
		t.Fatalf("test PostgreSQL: %v", pgCluster.err)
	}
	name := fmt.Sprintf("wdtest_%d_%d", os.Getpid(), pgCluster.n.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgCluster.admin)
	if err != nil {
		t.Fatalf("test PostgreSQL: connect %s: %v", redact(pgCluster.admin), err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("test PostgreSQL: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if admin, err := pgx.Connect(ctx, pgCluster.admin); err == nil {
			// FORCE: a store the test leaked must not keep the database.
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			admin.Close(ctx)
		}
	})
	u, err := url.Parse(pgCluster.admin)
	if err != nil {
		t.Fatalf("test PostgreSQL: %s: %v", redact(pgCluster.admin), err)
	}
	u.Path = "/" + name
	return u.String()
}

// PostgresMain runs a package's tests and stops the throwaway cluster, if
// one was started, before the process exits: a TestMain of
// `os.Exit(testenv.PostgresMain(m))`.
func PostgresMain(m *testing.M) int {
	code := m.Run()
	StopPostgres()
	return code
}

// StopPostgres stops the throwaway cluster and removes its directory (a
// fast shutdown). Nothing to do with an existing server or none started.
func StopPostgres() {
	if c := pgCluster.cmd; c != nil && c.Process != nil {
		_ = c.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
		pgCluster.cmd = nil
	}
	if pgCluster.dir != "" {
		// Retried: a backend finishing its exit may still write a file
		// while the tree is removed.
		for range 5 {
			if os.RemoveAll(pgCluster.dir) == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		pgCluster.dir = ""
	}
}

// pgBin finds the newest Debian PostgreSQL server binaries.
func pgBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", fmt.Errorf("no /usr/lib/postgresql/*/bin/initdb: install the Debian package postgresql (make test does), or set %s to an existing server", PostgresEnv)
	}
	sort.Slice(ok, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[j])))
		return vi < vj
	})
	return ok[len(ok)-1], nil
}

// serverUser is who the server runs as: PostgreSQL refuses to run as root,
// so root's tests run it as the Debian package's postgres user (or nobody);
// anyone else runs it as themselves.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run the server as")
}

func startCluster() error {
	bin, err := pgBin()
	if err != nil {
		return err
	}
	cred, err := serverUser()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "watchdog-pg-")
	if err != nil {
		return err
	}
	pgCluster.dir = dir
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Dir = dir
		c.Env = append(os.Environ(), "LC_ALL=C")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return c
	}
	if out, err := run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	var log Buffer
	srv := run("postgres", "-D", data, "-c", "listen_addresses=", "-c", "unix_socket_directories="+dir,
		"-c", "max_connections=300", "-c", "fsync=on")
	srv.Stdout, srv.Stderr = &log, &log
	// If this test process dies without StopPostgres, the server follows
	// (SIGQUIT: the postmaster stops its backends at once).
	srv.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	pgCluster.cmd = srv
	pgCluster.admin = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}}.Encode()}).String()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, pgCluster.admin)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			StopPostgres()
			return fmt.Errorf("postgres did not accept connections in 2m: %v; its log: %s", err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// redact hides a URL's password in a test message.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
