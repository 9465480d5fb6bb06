package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// specDefaults is docs/reference/config.md's defaults written out by hand, so that a changed
// default value fails a test.
var specDefaults = Config{
	HostID:       "",
	Store:        Store{Driver: "sqlite", DSN: "./watchdog.db"},
	Listen:       "127.0.0.1:9715",
	AllowedHosts: []string{},
	Auth:         Auth{Mode: "", TokenFile: "", Tokens: []Token{}},
	Thresholds: Thresholds{
		IdleAfter:       Duration(10 * time.Minute),
		StalledAfter:    Duration(60 * time.Minute),
		SlowAfter:       Duration(60 * time.Minute),
		SlowUntil:       Duration(3 * time.Hour),
		TerminalGrace:   Duration(30 * time.Second),
		PhantomAfter:    Duration(time.Hour),
		MisfireGrace:    Duration(5 * time.Minute),
		FailureWindow:   Duration(24 * time.Hour),
		TriageRetention: Duration(90 * 24 * time.Hour),

		HostDisconnectedAfter: Duration(time.Minute),
		HostLostAfter:         Duration(15 * time.Minute),
		RequireHeartbeat:      []string{},
	},
	Jobs: Jobs{
		Sweep:           "@every 1m",
		EnforceTerminal: "@every 30s",
		ReapPhantoms:    "@every 5m",
		CheckSchedules:  "@every 1m",
		Vacuum:          "@daily",
	},
	Reaper:       Reaper{DryRun: false, MaxPerRun: 500, KillOrphans: false, KillGrace: Duration(10 * time.Second), KillUsers: []string{}, LeftoverGrace: Duration(30 * time.Second)},
	Log:          Log{Level: "info", Format: ""},
	Alertmanager: Alertmanager{URLs: []string{}, ResendEvery: Duration(time.Minute), Timeout: Duration(10 * time.Second)},
	HTTP:         HTTP{MaxConnections: 1024},
	ProcessTree:  "events",
}

func TestDefaults(t *testing.T) {
	if got := Default(); !reflect.DeepEqual(*got, specDefaults) {
		t.Errorf("Default() = %+v, want %+v", *got, specDefaults)
	}
	// No file at all: the defaults.
	got, err := Load("")
	if err != nil {
		t.Fatalf("Load(\"\"): %v", err)
	}
	if !reflect.DeepEqual(*got, specDefaults) {
		t.Errorf("Load(\"\") = %+v, want %+v", *got, specDefaults)
	}
	// A file that says nothing: the defaults.
	for _, in := range []string{"", "\n", "# only a comment\n", "---\n", "~\n", "thresholds:\n", "thresholds:\n  idle_after:\n"} {
		got, err := Parse([]byte(in))
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(*got, specDefaults) {
			t.Errorf("Parse(%q) = %+v, want the defaults", in, *got)
		}
	}
}

func TestDefaultValidates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

func TestDefaultIsACopy(t *testing.T) {
	c := Default()
	c.Thresholds.IdleAfter = 1
	c.Store.DSN = "changed"
	if DefaultThresholds.IdleAfter == 1 || DefaultStore.DSN == "changed" {
		t.Fatal("changing Default()'s result changed the exported defaults")
	}
}

func TestLoadGood(t *testing.T) {
	got, err := Load("testdata/good.yaml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := Config{
		HostID:       "host-a",
		Store:        Store{Driver: "sqlite", DSN: "/var/lib/watchdog/watchdog.db"},
		Listen:       "0.0.0.0:9800",
		ListenUnix:   "/run/watchdog/api.sock",
		AllowedHosts: []string{"watchdog.example.org", "host-a"},
		Auth: Auth{Mode: "token", TokenFile: "/etc/watchdog/token", PublicReads: true,
			Tokens: []Token{{Name: "ci", File: "/etc/watchdog/tokens/ci", Scopes: []string{"report"}, Users: []string{"0"}}}},
		Thresholds: Thresholds{
			IdleAfter:       Duration(5 * time.Minute),
			StalledAfter:    Duration(30 * time.Minute),
			SlowAfter:       Duration(2 * time.Hour),
			SlowUntil:       Duration(6 * time.Hour),
			TerminalGrace:   Duration(45 * time.Second),
			PhantomAfter:    Duration(2 * time.Hour),
			MisfireGrace:    Duration(10 * time.Minute),
			FailureWindow:   Duration(48 * time.Hour),
			TriageRetention: Duration(30 * 24 * time.Hour),

			HostDisconnectedAfter: Duration(2 * time.Minute),
			HostLostAfter:         Duration(30 * time.Minute),
			RequireHeartbeat:      []string{"session", "invocation"},
		},
		Jobs: Jobs{
			Sweep:           "@every 10s",
			EnforceTerminal: "@every 20s",
			ReapPhantoms:    "*/10 * * * *",
			CheckSchedules:  "@every 2m",
			Vacuum:          "30 3 * * *",
		},
		Reaper: Reaper{DryRun: true, MaxPerRun: 100, KillOrphans: true, KillGrace: Duration(15 * time.Second), KillUsers: []string{"root", "1001"},
			KillLeftovers: true, LeftoverGrace: Duration(time.Minute)},
		Log: Log{Level: "debug", Format: "json"},
		Alertmanager: Alertmanager{
			URLs:        []string{"http://127.0.0.1:9093", "https://am.example.org/"},
			ResendEvery: Duration(30 * time.Second), Timeout: Duration(5 * time.Second),
			RunbookURL: "https://wiki.example.org/watchdog/reasons",
		},
		HTTP:        HTTP{MaxConnections: 256},
		Web:         Web{ConfigFile: "/etc/watchdog/web.yml"},
		ProcessTree: "walk",
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Load = %+v\nwant %+v", *got, want)
	}
	// good.yaml sets every key, each to something other than its default,
	// so a key that silently fails to decode cannot pass.
	for _, path := range sameLeaves(reflect.ValueOf(*got), reflect.ValueOf(*Default()), "") {
		if path != "store.driver" { // good.yaml is an SQLite file; store_test.go loads a postgres one
			t.Errorf("good.yaml leaves %s at its default", path)
		}
	}
}

// sameLeaves returns the key paths whose values are equal in a and b.
func sameLeaves(a, b reflect.Value, prefix string) []string {
	var same []string
	for i := range a.NumField() {
		path := prefix + yamlKey(a.Type().Field(i))
		if a.Field(i).Kind() == reflect.Struct {
			same = append(same, sameLeaves(a.Field(i), b.Field(i), path+".")...)
		} else if reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			same = append(same, path)
		}
	}
	return same
}

func TestPartialFileKeepsOtherDefaults(t *testing.T) {
	got, err := Parse([]byte("thresholds:\n  idle_after: 5m\nreaper:\n  dry_run: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := *Default()
	want.Thresholds.IdleAfter = Duration(5 * time.Minute)
	want.Reaper.DryRun = true
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Parse = %+v, want %+v", *got, want)
	}
}

func TestLoadBadConfigs(t *testing.T) {
	tests := []struct {
		input string
		want  string
	}{
		// YAML itself
		{"invalid-syntax.yaml", `yaml: line 2: did not find expected ',' or ']'`},
		{"invalid-multiple-documents.yaml", `line 2: more than one YAML document (a config file holds one)`},
		{"invalid-top-level.yaml", `line 1: top level: "just a string" is not a mapping`},
		// Keys and types (decoding)
		{"invalid-unknown-key.yaml", `line 3: unknown key "thresholds.idel_after" (did you mean "thresholds.idle_after"?)`},
		{"invalid-unknown-section.yaml", `line 2: unknown key "foo"`},
		{"invalid-duplicate-key.yaml", `line 3: duplicate key "thresholds.idle_after" (first at line 2)`},
		{"invalid-section-type.yaml", `thresholds: "5m" is not a mapping`},
		{"invalid-string-type.yaml", `host_id: a list is not a string`},
		{"invalid-duration.yaml", `thresholds.stalled_after: "five" is not a duration (try 1h)`},
		{"invalid-duration-days.yaml", `thresholds.failure_window: "1e300d" is not a duration (try 24h)`},
		{"invalid-int.yaml", `reaper.max_per_run: "lots" is not an integer`},
		{"invalid-int-fraction.yaml", `reaper.max_per_run: "1.5" is not an integer`},
		{"invalid-bool.yaml", `reaper.dry_run: "maybe" is not true or false`},
		{"invalid-several-decode.yaml", `reaper.max_per_run: "1.5" is not an integer` + "\n" +
			`thresholds.idle_after: "soon" is not a duration (try 10m)` + "\n" +
			`line 5: unknown key "thresholds.stalled_afer" (did you mean "thresholds.stalled_after"?)`},
		// Values (validation)
		{"invalid-require-heartbeat.yaml", `thresholds: require_heartbeat: "sesion" is not an entity type (known: agent, invocation, play, schedule, session, show, subagent, team, turn, workflow)`},
		{"invalid-driver.yaml", `store.driver: "mysql" is not supported (sqlite or postgres)`},
		{"invalid-driver-postgres-path.yaml", `store.dsn: with store.driver: postgres, must be a postgres:// (or postgresql://) URL`},
		{"invalid-driver-sqlite-url.yaml", `store.dsn: a postgres:// URL needs store.driver: postgres`},
		{"invalid-driver-postgres-own-token.yaml", `auth.token_file: required with store.driver: postgres (the daemon's own token is kept beside an SQLite file; a server has no such place), or auth: none on loopback`},
		{"invalid-dsn-empty.yaml", `store.dsn: must not be empty`},
		{"invalid-listen.yaml", `listen: "nohostport" is not host:port`},
		{"invalid-listen-port.yaml", `listen: "127.0.0.1:http" is not host:port (the port must be a number from 0 to 65535)`},
		{"invalid-listen-auth-none.yaml", `auth: none is refused with listen "0.0.0.0:9715", not a loopback address: anyone who can reach it could write (remove auth: none, and the daemon creates a token or reads auth.token_file)`},
		{"invalid-listen-auth-mode-none.yaml", `auth: none is refused with listen ":9715", not a loopback address: anyone who can reach it could write (remove auth: none, and the daemon creates a token or reads auth.token_file)`},
		{"invalid-auth-none-with-file.yaml", `auth.token_file: "/etc/watchdog/token" is set but auth.mode is none; remove one of them`},
		{"invalid-auth-mode.yaml", `auth.mode: "basic" is not one of token, none`},
		{"invalid-auth-scalar.yaml", `auth: "off" is not a mapping, none or token`},
		{"invalid-auth-unknown-key.yaml", `line 3: unknown key "auth.token_fil" (did you mean "auth.token_file"?)`},
		{"invalid-auth-type.yaml", `auth.token_file: a list is not a string`},
		{"invalid-allowed-hosts.yaml", `allowed_hosts[1]: "http://watchdog.example.org:9715" is not a host name (give the bare name, e.g. watchdog.example.org, without scheme, port or path)`},
		{"invalid-threshold-positive.yaml", `thresholds.terminal_grace: 0s must be positive (try 30s)`},
		{"invalid-threshold-idle-stalled.yaml", `thresholds: idle_after (20m) must be less than stalled_after (10m)`},
		{"invalid-threshold-slow.yaml", `thresholds: slow_after (3h) must be less than slow_until (1h)`},
		{"invalid-threshold-host-lost.yaml", `thresholds: host_disconnected_after (20m) must be less than host_lost_after (10m)`},
		{"invalid-cron.yaml", `jobs.sweep: "every 15s" is not a cron spec: expected exactly 5 fields, found 2: [every 15s]`},
		{"invalid-max-per-run.yaml", `reaper.max_per_run: must be at least 1`},
		{"invalid-http-max-connections.yaml", `http.max_connections: 0 must be between 1 and 1048576`},
		{"invalid-kill-grace.yaml", `reaper.kill_grace: -1s must be positive (try 10s)`},
		{"invalid-leftover-grace.yaml", `reaper.leftover_grace: 0s must be positive (try 30s)`},
		{"invalid-kill-users.yaml", `reaper.kill_users[0]: "nosuchuser-watchdog" is not a user on this host (a name from /etc/passwd or a numeric uid)`},
		{"invalid-log-level.yaml", `log.level: "loud" is not one of debug, info, warn, error`},
		{"invalid-log-format.yaml", `log.format: "xml" is not one of json, console (or empty to choose by terminal)`},
		{"invalid-process-tree.yaml", `process_tree: "connector" is not one of events, walk, off`},
		{"invalid-alertmanager-url.yaml", `alertmanager.urls[1]: "127.0.0.1:9093" is not a URL (try http://127.0.0.1:9093)` + "\n" +
			`alertmanager.urls[2]: "ftp://am.example.org" is not an http or https URL (try http://127.0.0.1:9093)`},
		{"invalid-alertmanager-runbook.yaml", `alertmanager.runbook_url: "wiki/watchdog" is not an http or https URL (try http://127.0.0.1:9093)` + "\n" +
			`alertmanager.resend_every: 0s must be positive (try 1m)`},
		{"invalid-several-validate.yaml", `store.driver: "mysql" is not supported (sqlite or postgres)` + "\n" +
			`jobs.vacuum: "@nightly" is not a cron spec: unrecognized descriptor: @nightly` + "\n" +
			`log.level: "loud" is not one of debug, info, warn, error`},
		// Every kind at once: one run reports them all, keys first.
		{"invalid-several-kinds.yaml", `thresholds.idle_after: "soon" is not a duration (try 10m)` + "\n" +
			`line 5: unknown key "thresholds.idel_after" (did you mean "thresholds.idle_after"?)` + "\n" +
			`auth: none is refused with listen "0.0.0.0:9715", not a loopback address: anyone who can reach it could write (remove auth: none, and the daemon creates a token or reads auth.token_file)` + "\n" +
			`log.level: "loud" is not one of debug, info, warn, error`},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.input] = true
		t.Run(tt.input, func(t *testing.T) {
			c, err := Load(filepath.Join("testdata", tt.input))
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want error %q", *c, tt.want)
			}
			if c != nil {
				t.Errorf("Load returned a config with its error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
	files, err := filepath.Glob("testdata/invalid-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !covered[filepath.Base(f)] {
			t.Errorf("%s has no row in the table", f)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(%s) = %v, want fs.ErrNotExist", path, err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
}

func TestParseFlowStyle(t *testing.T) {
	// Several values on one line: each problem still finds its key.
	_, err := Parse([]byte("reaper: {max_per_run: [1], kill_grace: x}\nlog: {level: {a: 1}}\n"))
	want := `reaper.max_per_run: a list is not an integer` + "\n" +
		`reaper.kill_grace: "x" is not a duration (try 10s)` + "\n" +
		`log.level: a mapping is not a string`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Store.DSN = ""
	c.Reaper.MaxPerRun = 0
	c.Thresholds.IdleAfter = 0
	err := c.Validate()
	want := "store.dsn: must not be empty\n" +
		"thresholds.idle_after: 0s must be positive (try 10m)\n" +
		"reaper.max_per_run: must be at least 1"
	if err == nil || err.Error() != want {
		t.Fatalf("Validate:\n got %v\nwant %s", err, want)
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 3 {
		t.Errorf("Validate joined %d errors, want 3", n)
	}
}

func TestListenLoopback(t *testing.T) {
	for _, tt := range []struct {
		listen, token string
		ok            bool
	}{
		{"127.0.0.1:9715", "", true},
		{"localhost:9715", "", true},
		{"[::1]:0", "", true},
		{"0.0.0.0:9715", "/etc/watchdog/token", true},
		{"0.0.0.0:9715", "", true}, // the daemon's own token
		{"127.0.0.1:9715", "none", true},
		{"localhost:9715", "none", true},
		{"[::1]:9715", "none", true},
		{":9715", "none", false}, // every interface
		{"10.0.0.1:9715", "none", false},
		{"example.org:9715", "none", false},
	} {
		c := Default()
		c.Listen = tt.listen
		if tt.token == "none" {
			c.Auth.Mode = AuthNone
		} else {
			c.Auth.TokenFile = tt.token
		}
		if err := c.Validate(); (err == nil) != tt.ok {
			t.Errorf("listen %q, token %q: Validate() = %v, want ok=%v", tt.listen, tt.token, err, tt.ok)
		}
	}
}

func TestAuthForms(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Auth
	}{
		{"auth: none\n", Auth{Mode: AuthNone, Tokens: []Token{}}},
		{"auth: token\n", Auth{Mode: AuthToken, Tokens: []Token{}}},
		{"auth:\n  mode: none\n", Auth{Mode: AuthNone, Tokens: []Token{}}},
		{"auth: {mode: token, token_file: /t}\n", Auth{Mode: AuthToken, TokenFile: "/t", Tokens: []Token{}}},
		{"auth:\n  token_file: /t\n", Auth{TokenFile: "/t", Tokens: []Token{}}},
		{"auth:\n", Auth{Tokens: []Token{}}},
	} {
		c, err := Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(c.Auth, tt.want) {
			t.Errorf("Parse(%q).Auth = %+v, want %+v", tt.in, c.Auth, tt.want)
		}
		if c.Auth.None() != (tt.want.Mode == AuthNone) {
			t.Errorf("Parse(%q).Auth.None() = %t", tt.in, c.Auth.None())
		}
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1500 * time.Millisecond, "1.5s"},
		{10 * time.Second, "10s"},
		{time.Minute, "1m"},
		{90 * time.Minute, "1h30m"},
		{time.Hour, "1h"},
		{time.Hour + 5*time.Second, "1h0m5s"},
		{24 * time.Hour, "24h"},
		{-5 * time.Minute, "-5m"},
	} {
		d := Duration(tt.d)
		if got := d.String(); got != tt.want {
			t.Errorf("Duration(%v).String() = %q, want %q", tt.d, got, tt.want)
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back Duration
		if err := yaml.Unmarshal(out, &back); err != nil || back != d {
			t.Errorf("round trip of %v through %q = %v, %v", tt.d, out, back, err)
		}
	}
}

// TestDurationDays: a config duration may be a number of days, as
// `snooze --for` takes them ("7d", "1.5d"); days past what a duration
// holds are refused.
func TestDurationDays(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"7d", 7 * 24 * time.Hour, true},
		{"1.5d", 36 * time.Hour, true},
		{"0d", 0, true},
		{"90m", 90 * time.Minute, true},
		{"1e300d", 0, false},
		{"d", 0, false},
		{"NaNd", 0, false},
		{"week", 0, false},
	} {
		var d Duration
		err := yaml.Unmarshal([]byte(tt.in), &d)
		if (err == nil) != tt.ok || (tt.ok && time.Duration(d) != tt.want) {
			t.Errorf("%q: %v, %v; want %v (ok %v)", tt.in, time.Duration(d), err, tt.want, tt.ok)
		}
	}
}

func TestDurationErrorOutsideConfig(t *testing.T) {
	// Without a Config around it, the error keeps its position.
	var d Duration
	err := yaml.Unmarshal([]byte("ten"), &d)
	if want := `yaml: unmarshal errors:` + "\n" + `  line 1: column 1: "ten" is not a duration (try 30s)`; err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

func TestSuggestKey(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"thresholds.idel_after", "thresholds.idle_after"},
		{"thresholds.Idle-After", "thresholds.idle_after"},
		{"lisen", "listen"},
		{"foo", ""}, // "log" is two edits away: too far for three letters
		{"reaper.kill_grace_period", ""},
		{"nosuch.idle_after", ""},
	} {
		if got := suggestKey(tt.path); got != tt.want {
			t.Errorf("suggestKey(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestSyntaxErrorLines(t *testing.T) {
	// Syntax errors are yaml.v3's own, with its line numbers: it counts
	// the lines of its parser's errors (not its scanner's) from 0, so for
	// those the line given is the one before the problem.
	for _, tt := range []struct{ in, want string }{
		{"a: 1\nb: 2\nc: [3\n", `yaml: line 2: did not find expected ',' or ']'`},
		{"a: 1\nb: 2\nc: d: e\n", `yaml: line 3: mapping values are not allowed in this context`},
		{"a: 1\nb: 2\nc: 'x\n", `yaml: line 3: found unexpected end of stream`},
		{"a: 1\nb:\n  - 1\n c: 2\n", `yaml: line 3: did not find expected key`},
		{"listen: *nowhere\n", `yaml: unknown anchor 'nowhere' referenced`},
	} {
		_, err := Parse([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q):\n got %v\nwant %s", tt.in, err, tt.want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	// Moved here with the rule from api, whose CheckListen it was.
	cases := []struct {
		addr  string
		token bool
		ok    bool
	}{
		{"127.0.0.1:9715", false, true},
		{"[::1]:9715", false, true},
		{"localhost:0", false, true},
		{"127.0.0.2:80", false, true},
		// Failure cases.
		{":9715", false, false},
		{"0.0.0.0:9715", false, false},
		{"10.0.0.5:9715", false, false},
		{"watchdog.internal:9715", false, false},
		{"127.0.0.1", true, false},
		{"127.0.0.1:99999", true, false},
		// With a token anything well-formed goes.
		{"0.0.0.0:9715", true, true},
		{":9715", true, true},
	}
	for _, c := range cases {
		err := CheckListen(c.addr, !c.token)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, authNone=%v) = %v, want ok=%v", c.addr, !c.token, err, c.ok)
		}
	}
	if err := CheckListen("0.0.0.0:9715", true); err == nil || !strings.Contains(err.Error(), "auth.token_file") {
		t.Errorf("refusal should name the fix: %v", err)
	}
}

func TestParseMergeKeys(t *testing.T) {
	// Merge keys (<<) work as in yaml.v3: the mapping's own keys win, and a
	// merged key is checked like any other.
	c, err := Parse([]byte("base: &b {idle_after: 5m, stalled_after: 2h}\n"))
	if err == nil || c != nil {
		t.Fatalf("an unknown top-level key was accepted: %v", err)
	}
	c, err = Parse([]byte("thresholds:\n  <<: {idle_after: 5m, stalled_after: 2h}\n  idle_after: 7m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Thresholds.IdleAfter != Duration(7*time.Minute) || c.Thresholds.StalledAfter != Duration(2*time.Hour) {
		t.Errorf("merged thresholds = %+v", c.Thresholds)
	}
	_, err = Parse([]byte("thresholds: &t\n  <<: *t\n"))
	if err == nil || !strings.Contains(err.Error(), "merges itself") {
		t.Errorf("a self-merge: %v", err)
	}
	_, err = Parse([]byte("thresholds:\n  <<: {idel_after: 5m}\n"))
	if want := `line 2: unknown key "thresholds.idel_after" (did you mean "thresholds.idle_after"?)`; err == nil || err.Error() != want {
		t.Errorf("a merged unknown key:\n got %v\nwant %s", err, want)
	}
}

func TestInspectKeepsWhatDecoded(t *testing.T) {
	c, err := Inspect("testdata/invalid-several-kinds.yaml")
	if err == nil || c == nil {
		t.Fatalf("Inspect = %v, %v; want the config and its problems", c, err)
	}
	if c.Listen != "0.0.0.0:9715" || c.Thresholds.IdleAfter != DefaultThresholds.IdleAfter {
		t.Errorf("Inspect kept listen %q, idle_after %s", c.Listen, c.Thresholds.IdleAfter)
	}
}

// TestTokensAndSocketValidated: every problem of auth.tokens and
// listen_unix is one error naming the key.
func TestTokensAndSocketValidated(t *testing.T) {
	for _, tt := range []struct {
		in, want string
	}{
		{"auth:\n  tokens:\n    - {name: ci, file: rel/token, scopes: [report]}\n", `auth.tokens[0].file: "rel/token" must be an absolute path`},
		{"auth:\n  tokens:\n    - {name: ci, file: /t, scopes: [write]}\n", `auth.tokens[0].scopes[0]: "write" is not one of read, report, triage, admin`},
		{"auth:\n  tokens:\n    - {name: ci, file: /t}\n", `auth.tokens[0].scopes: give at least one of`},
		{"auth:\n  tokens:\n    - {name: \"has space\", file: /t, scopes: [read]}\n", `auth.tokens[0].name: "has space" must be`},
		{"auth:\n  tokens:\n    - {name: ci, file: /t, scopes: [read]}\n    - {name: ci, file: /u, scopes: [read]}\n", `auth.tokens[1].name: "ci" is given twice`},
		{"auth:\n  tokens:\n    - {name: ci, file: /t, scopes: [read], uids: [no-such-user-here]}\n", `auth.tokens[0].uids[0]: "no-such-user-here" is not a user`},
		{"auth:\n  mode: none\n  tokens:\n    - {name: ci, file: /t, scopes: [read]}\n", `auth.tokens[0]: tokens are set but auth.mode is none`},
		{"listen_unix: relative.sock\n", `listen_unix: "relative.sock" must be an absolute path`},
		{"web:\n  config_file: web.yml\n", `web.config_file: "web.yml" must be an absolute path`},
	} {
		_, err := Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
	c, err := Parse([]byte("auth:\n  tokens:\n    - {name: ci-runner, file: /etc/watchdog/ci, scopes: [report, read], uids: [root, \"65534\"]}\nlisten_unix: none\n"))
	if err != nil {
		t.Fatal(err)
	}
	if uids, err := c.Auth.Tokens[0].UIDs(); err != nil || len(uids) != 2 || uids[0] != 0 || uids[1] != 65534 {
		t.Errorf("uids %v %v", uids, err)
	}
	if c.UnixSocket() != "" {
		t.Errorf("listen_unix: none gives %q", c.UnixSocket())
	}
}
