package main

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
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is the PostgreSQL server of the stores part: a throwaway
// cluster the driver starts (the way internal/testenv starts the tests'
// one: initdb into a temporary directory, the server on a unix socket
// there only, fsync on), or an existing server given with -pg-dsn. Each
// daemon gets a fresh database of its own on it.
type pgServer struct {
	admin string // URL of a database whose user may CREATE DATABASE
	srv   *child // the throwaway server; nil with -pg-dsn
	dir   string // the throwaway cluster's directory
	n     int    // databases made so far
}

// pgBinDir finds the newest Debian PostgreSQL server binaries.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return "", errors.New("no /usr/lib/postgresql/*/bin/initdb: install the Debian package postgresql (scripts/bench.sh does), or give an existing server with -pg-dsn")
	}
	sort.Slice(ok, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[j])))
		return vi < vj
	})
	return ok[len(ok)-1], nil
}

// pgServerUser is who the throwaway server runs as: PostgreSQL refuses
// root, so root runs it as the Debian package's postgres user (or
// nobody); anyone else as themselves (nil).
func pgServerUser() (*syscall.Credential, error) {
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
	return nil, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as")
}

// startPG starts a throwaway cluster, or uses dsn when it is not empty.
// The server stays in the driver's process group, so the script's trap
// ends it with the rest.
func startPG(ctx context.Context, dsn string, timeout time.Duration) (*pgServer, error) {
	if dsn != "" {
		p := &pgServer{admin: dsn}
		if err := p.ping(ctx); err != nil {
			return nil, fmt.Errorf("-pg-dsn: %w", err)
		}
		return p, nil
	}
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := pgServerUser()
	if err != nil {
		return nil, err
	}
	// Its own temporary directory, not the run's: the server's user must
	// be able to reach it, and the run's may be private to us.
	dir, err := os.MkdirTemp("", "watchdog-bench-pg.")
	if err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	p := &pgServer{dir: dir}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			p.stop()
			return nil, fmt.Errorf("cluster directory: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
	initdb.Dir, initdb.Env = dir, append(cleanEnv(), "LC_ALL=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		p.stop()
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	// fsync on (the default, said aloud): a commit is durable, as on the
	// SQLite side (synchronous=FULL).
	// 400 connections: the fleet part's 20 daemons hold up to 15 each (a
	// pool of 12, the listener, the leader's and the host's locks).
	// SIGQUIT if the driver dies first: the postmaster then stops its
	// backends at once.
	attr := &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	srv, err := startChildAs("postgres", filepath.Join(dir, "server.log"), attr, dir,
		filepath.Join(bin, "postgres"), "-D", data, "-c", "listen_addresses=", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=on", "-c", "max_connections=400")
	if err != nil {
		p.stop()
		return nil, err
	}
	p.srv = srv
	p.admin = (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}}.Encode()}).String()
	err = poll(ctx, timeout, 100*time.Millisecond, "PostgreSQL to accept connections", func() (bool, error) {
		if gone, why := srv.exited(); gone {
			return false, fmt.Errorf("%s", why)
		}
		return p.ping(ctx) == nil, nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// ping connects to the admin database once.
func (p *pgServer) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(p.admin), err)
	}
	return conn.Close(ctx)
}

// version is the server's version string, for the table's header.
func (p *pgServer) version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", redact(p.admin), err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return v, nil
}

// database creates a new, empty database and returns its URL.
func (p *pgServer) database(ctx context.Context) (string, error) {
	p.n++
	name := fmt.Sprintf("wdbench_%d_%d", os.Getpid(), p.n)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return "", fmt.Errorf("connect %s: %w", redact(p.admin), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(p.admin)
	if err != nil {
		return "", fmt.Errorf("%s: %w", redact(p.admin), err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// drop removes a database database made (on an existing server, where
// it would otherwise stay; a throwaway cluster goes whole).
func (p *pgServer) drop(ctx context.Context, dsn string) error {
	if p.srv != nil {
		return nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return fmt.Errorf("%s: %w", redact(dsn), err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.admin)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(p.admin), err)
	}
	defer conn.Close(context.Background())
	name := pgx.Identifier{u.Path[1:]}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// stop ends the throwaway server (SIGTERM is a smart shutdown: the
// daemons are gone by then) and removes its directory.
func (p *pgServer) stop() {
	if p.srv != nil {
		p.srv.stop(30 * time.Second)
		p.srv = nil
	}
	if p.dir != "" {
		// Retried: a backend finishing its exit may still write a file.
		for range 5 {
			if os.RemoveAll(p.dir) == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		p.dir = ""
	}
}

// redact hides a URL's password in a message.
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
