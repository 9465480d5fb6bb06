package config

import (
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Auth is the "auth" section; YAML may also give it as the scalar `none`
// or `token`.
type Auth struct {
	// Mode is AuthToken (the default, also empty) or AuthNone, which is
	// refused on a non-loopback listen address.
	Mode string `yaml:"mode"`
	// TokenFile holds the admin bearer token; empty: the daemon's own, made
	// beside the database. Must be empty with AuthNone.
	TokenFile string `yaml:"token_file"`
	// Tokens are scoped bearer tokens, each read from its own file (re-read
	// on SIGHUP); the token_file token stays, with scope admin.
	Tokens []Token `yaml:"tokens"`
	// PublicReads opens the reads to callers with no token. Off by default:
	// a read shows what the daemon saw of processes and files.
	PublicReads bool `yaml:"public_reads"`
}

// Token is one scoped bearer token (auth.tokens).
type Token struct {
	// Name is what the audit rows say of its writes.
	Name string `yaml:"name"`
	// File holds the token (one line, as tokenfile reads it).
	File string `yaml:"file"`
	// Scopes are what it may do: read, report, triage, admin (all of these,
	// and the admin actor).
	Scopes []string `yaml:"scopes"`
	// Users are the users whose processes it may register and act on. Empty:
	// any pid, but no uid is proven, so the reaper never signals them.
	Users []string `yaml:"uids"`
}

// The scopes of a token.
const (
	ScopeRead   = "read"
	ScopeReport = "report"
	ScopeTriage = "triage"
	ScopeAdmin  = "admin"
)

// Scopes lists every scope.
var Scopes = []string{ScopeRead, ScopeReport, ScopeTriage, ScopeAdmin}

// UIDs resolves Users to uids.
func (t Token) UIDs() ([]int, error) {
	var uids []int
	var errs []error
	for i, name := range t.Users {
		uid, err := lookupUID(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("uids[%d]: %w", i, err))
			continue
		}
		uids = append(uids, uid)
	}
	return uids, errors.Join(errs...)
}

// The values of auth.mode.
const (
	// AuthToken requires a bearer token on every mutating request.
	AuthToken = "token"
	// AuthNone lets any local process write; loopback listen only.
	AuthNone = "none"
)

// None reports whether auth is explicitly off.
func (a Auth) None() bool { return a.Mode == AuthNone }

// decodeScalar reads the scalar forms `auth: none` and `auth: token`; the
// mapping form is decoded like any section.
func (a *Auth) decodeScalar(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && (n.Value == AuthNone || n.Value == AuthToken) {
		a.Mode = n.Value
		return nil
	}
	return fmt.Errorf("%s is not a mapping, none or token", describe(n))
}

// lookupUID turns a user name or a numeric uid into a uid.
func lookupUID(name string) (int, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return 0, errors.New("empty user name")
	}
	if n, err := strconv.ParseUint(name, 10, 31); err == nil {
		return int(n), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("%q is not a user on this host (a name from /etc/passwd or a numeric uid)", name)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("user %q has a non-numeric uid %q", name, u.Uid)
	}
	return uid, nil
}

func (a Auth) validate() []error {
	switch a.Mode {
	case "", AuthToken:
	case AuthNone:
		if a.TokenFile != "" {
			return []error{fmt.Errorf("auth.token_file: %q is set but auth.mode is none; remove one of them", a.TokenFile)}
		}
	default:
		return []error{fmt.Errorf("auth.mode: %q is not one of token, none", a.Mode)}
	}
	var errs []error
	names := map[string]bool{}
	for i, t := range a.Tokens {
		at := fmt.Sprintf("auth.tokens[%d]", i)
		switch {
		case a.None():
			errs = append(errs, fmt.Errorf("%s: tokens are set but auth.mode is none; remove one of them", at))
		case !reTokenName.MatchString(t.Name):
			errs = append(errs, fmt.Errorf("%s.name: %q must be 1-64 letters, digits and . _ - (the audit rows name it)", at, t.Name))
		case names[t.Name]:
			errs = append(errs, fmt.Errorf("%s.name: %q is given twice", at, t.Name))
		}
		names[t.Name] = true
		if t.File == "" || !filepath.IsAbs(t.File) {
			errs = append(errs, fmt.Errorf("%s.file: %q must be an absolute path", at, t.File))
		}
		if len(t.Scopes) == 0 {
			errs = append(errs, fmt.Errorf("%s.scopes: give at least one of %s", at, strings.Join(Scopes, ", ")))
		}
		for j, sc := range t.Scopes {
			if !slices.Contains(Scopes, sc) {
				errs = append(errs, fmt.Errorf("%s.scopes[%d]: %q is not one of %s", at, j, sc, strings.Join(Scopes, ", ")))
			}
		}
		if _, err := t.UIDs(); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", at, err))
		}
	}
	return errs
}

var reTokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
