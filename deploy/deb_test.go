package deploy

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What deploy/deb/nfpm.yaml and the Makefile's deb target put where.
const (
	debBinary     = "/usr/bin/watchdog"
	debUnit       = "/usr/lib/systemd/system/watchdog.service"
	debConfigDir  = "/etc/watchdog"
	debConfig     = "/etc/watchdog/config.yaml"
	debStateDir   = "/var/lib/watchdog"
	debDatabase   = "/var/lib/watchdog/watchdog.db"
	debExamples   = "/usr/share/doc/watchdog-sidecar/examples/watchdog.service.d"
	debWants      = "/etc/systemd/system/multi-user.target.wants/watchdog.service"
	debUser       = "watchdog"
	debPolicyRCD  = "/usr/sbin/policy-rc.d"
	debUnitSource = "systemd/watchdog.service"
	// dpkgLockCeiling bounds the wait for another dpkg or apt (a parallel
	// `make deps`) to let go of dpkg's lock: a ceiling, not a budget.
	dpkgLockCeiling = 10 * time.Minute
)

// TestDebPackage installs the package `make deb` built (WATCHDOG_DEB) with
// dpkg -i and checks what an operator gets: `watchdog version` saying the
// package's version, the files with their owners and modes, the
// conffile, the watchdog system user, the unit enabled and clean under
// systemd-analyze verify, and the command line working as that user from
// the packaged config. It reinstalls over an edited config (the edit
// stays), removes the package (config and state stay, as Debian's remove
// does) and purges it (they go; the user stays, as Debian's practice for
// system users is). A policy-rc.d keeps the daemon from being started on
// a host where systemd runs. `make deb-test` runs it, as root.
func TestDebPackage(t *testing.T) {
	deb := os.Getenv("WATCHDOG_DEB")
	if deb == "" {
		t.Skip("WATCHDOG_DEB names no package: `make deb-test` builds one and runs this test with it")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: dpkg -i installs the package for the whole host; run `make deb-test` as root")
	}
	for _, tool := range []string{"dpkg", "dpkg-deb", "dpkg-query", "dpkg-statoverride", "systemd-analyze", "getent", "runuser", "userdel", "groupdel", "lintian"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: the package test needs it (systemd-analyze is in the Debian package systemd, which `make deps` installs)", tool)
		}
	}

	control := debControl(t, deb)
	pkg, version := control["Package"], control["Version"]
	t.Logf("package %s %s (%s)", pkg, version, deb)
	for _, c := range []struct{ field, want string }{
		{"Package", "watchdog-sidecar"},
		{"Depends", "passwd"},
		// Debian's hardware watchdog daemon ships watchdog.service too.
		{"Conflicts", "watchdog"},
	} {
		if control[c.field] != c.want {
			t.Errorf("control field %s = %q, want %q", c.field, control[c.field], c.want)
		}
	}
	debLintian(t, deb)
	debRefuseInstalledHost(t, pkg)

	_, userErr := debGetent("passwd", debUser)
	_, groupErr := debGetent("group", debUser)
	userExisted, groupExisted := userErr == nil, groupErr == nil
	debNoStartPolicy(t)
	t.Cleanup(func() {
		if debStatus(pkg) != "" {
			if out, err := debDpkg("--purge", pkg); err != nil {
				t.Errorf("cleanup: dpkg --purge %s: %v\n%s", pkg, err, out)
			}
		}
		if _, err := debGetent("passwd", debUser); err == nil && !userExisted {
			if out, err := exec.Command("userdel", debUser).CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel %s: %v\n%s", debUser, err, out)
			}
		}
		if _, err := debGetent("group", debUser); err == nil && !groupExisted {
			if out, err := exec.Command("groupdel", debUser).CombinedOutput(); err != nil {
				t.Errorf("cleanup: groupdel %s: %v\n%s", debUser, err, out)
			}
		}
	})

	// --- Install ------------------------------------------------------------
	debMustDpkg(t, "-i", deb)
	if s := debStatus(pkg); s != "install ok installed" {
		t.Fatalf("after dpkg -i: status %q, want install ok installed", s)
	}

	out := debRun(t, debBinary, "version")
	if want := "watchdog " + version + " ("; !strings.HasPrefix(out, want) {
		t.Errorf("watchdog version = %q, want it to start with %q (the package's version, stamped at build)", out, want)
	}

	pw, err := debGetent("passwd", debUser)
	if err != nil {
		t.Fatalf("no user %s after install: %v", debUser, err)
	}
	gr, err := debGetent("group", debUser)
	if err != nil {
		t.Fatalf("no group %s after install: %v", debUser, err)
	}
	uid, _ := strconv.Atoi(pw[2])
	if uid == 0 || uid >= 1000 {
		t.Errorf("user %s has uid %d, want a system uid (1-999)", debUser, uid)
	}
	if pw[3] != gr[2] {
		t.Errorf("user %s's primary group is %s, want %s (group %s)", debUser, pw[3], gr[2], debUser)
	}
	if pw[5] != debStateDir || pw[6] != "/usr/sbin/nologin" {
		t.Errorf("user %s: home %q, shell %q; want %s and /usr/sbin/nologin", debUser, pw[5], pw[6], debStateDir)
	}

	installed := []debFile{
		{debBinary, 0o755, "root", "root"},
		{debUnit, 0o644, "root", "root"},
		{debConfigDir, fs.ModeDir | 0o755, "root", "root"},
		{debConfig, 0o640, "root", debUser},
		{debStateDir, fs.ModeDir | 0o750, debUser, debUser},
		{debExamples + "/kill-orphans.conf", 0o644, "root", "root"},
		{debExamples + "/artifacts.conf", 0o644, "root", "root"},
		{debExamples + "/remote-scrape.conf", 0o644, "root", "root"},
		{path.Dir(debExamples) + "/web-config.example.yml", 0o644, "root", "root"},
	}
	debCheckFiles(t, "after install", installed)

	// The unit is deploy's, with ExecStart at the packaged binary.
	src := debRead(t, debUnitSource)
	wantUnit := strings.Replace(src, "\nExecStart=/usr/local/bin/watchdog ", "\nExecStart="+debBinary+" ", 1)
	if wantUnit == src {
		t.Fatalf("%s has no 'ExecStart=/usr/local/bin/watchdog ' line", debUnitSource)
	}
	if got := debRead(t, debUnit); got != wantUnit {
		t.Errorf("%s is not deploy/%s with ExecStart=%s", debUnit, debUnitSource, debBinary)
	}
	// The config is the example, with the store where the unit runs, so
	// that the command line finds it from any directory.
	example := debRead(t, exampleConfig)
	wantConfig := strings.Replace(example, "\n  dsn: ./watchdog.db\n", "\n  dsn: "+debDatabase+"\n", 1)
	if wantConfig == example {
		t.Fatalf("%s has no '  dsn: ./watchdog.db' line", exampleConfig)
	}
	if got := debRead(t, debConfig); got != wantConfig {
		t.Errorf("%s is not deploy/%s with dsn: %s", debConfig, exampleConfig, debDatabase)
	}
	if conffiles := debQuery(t, pkg, "${Conffiles}"); !strings.Contains(conffiles, debConfig+" ") {
		t.Errorf("conffiles of %s = %q, want %s among them", pkg, conffiles, debConfig)
	}

	// Enabled, as dh_installsystemd enables a unit on first install.
	if target, err := filepath.EvalSymlinks(debWants); err != nil {
		t.Errorf("unit not enabled: %s: %v", debWants, err)
	} else if unit, _ := filepath.EvalSymlinks(debUnit); target != unit {
		t.Errorf("%s points at %s, want %s", debWants, target, unit)
	}

	// The installed unit, with the installed binary at its ExecStart.
	if out, err := exec.Command("systemd-analyze", "verify", "--man=no", debUnit).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", debUnit, err, out)
	}

	// The daemon's user reads the packaged config (group watchdog) and
	// writes the state directory; the command line, run from elsewhere
	// with no flags, finds the store through /etc/watchdog/config.yaml.
	debRun(t, "runuser", "-u", debUser, "--", debBinary, "check-config", debConfig)
	debRunStdin(t, `{"type":"session","id":"deb-test","lifecycle":"running"}`,
		"runuser", "-u", debUser, "--", debBinary, "register", "--db", debDatabase, "--json", "-")
	if out := debRun(t, "runuser", "-u", debUser, "--", debBinary, "status"); !strings.Contains(out, "deb-test") {
		t.Errorf("watchdog status as %s, with the packaged config, does not list the entity registered in %s:\n%s", debUser, debDatabase, out)
	}

	// --- Reinstall over an edited config ------------------------------------
	const edit = "# an operator's edit\n"
	f, err := os.OpenFile(debConfig, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(edit); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	debMustDpkg(t, "-i", deb)
	if got := debRead(t, debConfig); got != wantConfig+edit {
		t.Errorf("reinstalling replaced the edited %s", debConfig)
	}
	debCheckFiles(t, "after reinstall", installed)

	// --- Remove: the config and the state stay -------------------------------
	debMustDpkg(t, "-r", pkg)
	if s := debStatus(pkg); s != "deinstall ok config-files" {
		t.Errorf("after dpkg -r: status %q, want deinstall ok config-files", s)
	}
	debCheckGone(t, "after dpkg -r", debBinary, debUnit, debExamples)
	debCheckFiles(t, "after dpkg -r", []debFile{
		{debConfig, 0o640, "root", debUser},
		{debStateDir, fs.ModeDir | 0o750, debUser, debUser},
	})
	if got := debRead(t, debConfig); got != wantConfig+edit {
		t.Errorf("dpkg -r changed %s", debConfig)
	}
	if _, err := os.Stat(debDatabase); err != nil {
		t.Errorf("dpkg -r removed the state: %v", err)
	}

	// --- Purge: they go, the user stays -------------------------------------
	debMustDpkg(t, "--purge", pkg)
	if s := debStatus(pkg); s != "" {
		t.Errorf("after dpkg --purge: status %q, want none", s)
	}
	debCheckGone(t, "after dpkg --purge", debConfigDir, debStateDir, debWants)
	for _, path := range []string{debConfig, debStateDir} {
		if out, err := exec.Command("dpkg-statoverride", "--list", path).Output(); err == nil {
			t.Errorf("after dpkg --purge: a stat override is left on %s: %s", path, out)
		}
	}
	if _, err := debGetent("passwd", debUser); err != nil {
		t.Errorf("after dpkg --purge: user %s is gone, want it kept: %v", debUser, err)
	}
}

// debFile is a path the package installs, with its type and mode, owner
// and group.
type debFile struct {
	path       string
	mode       fs.FileMode
	owner, grp string
}

func debCheckFiles(t *testing.T, when string, files []debFile) {
	t.Helper()
	for _, f := range files {
		fi, err := os.Lstat(f.path)
		if err != nil {
			t.Errorf("%s: %v", when, err)
			continue
		}
		if got := fi.Mode() & (fs.ModeType | fs.ModePerm); got != f.mode {
			t.Errorf("%s: %s has mode %v, want %v", when, f.path, got, f.mode)
		}
		st := fi.Sys().(*syscall.Stat_t)
		owner, grp := debName("passwd", st.Uid), debName("group", st.Gid)
		if owner != f.owner || grp != f.grp {
			t.Errorf("%s: %s is owned by %s:%s, want %s:%s", when, f.path, owner, grp, f.owner, f.grp)
		}
	}
}

func debCheckGone(t *testing.T, when string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %s is still there (%v)", when, p, err)
		}
	}
}

// debRefuseInstalledHost fails when the host already has a watchdog the
// test would overwrite and then purge: a real install, or a run of this
// test that was killed before its cleanup.
func debRefuseInstalledHost(t *testing.T, pkg string) {
	t.Helper()
	for _, p := range []string{pkg, "watchdog"} {
		if s := debStatus(p); s != "" {
			t.Fatalf("the package %s is on this host (%s): the test would replace and then purge it; `dpkg --purge %s` first, or run it on another machine", p, s, p)
		}
	}
	for _, p := range []string{debBinary, debUnit, "/lib/systemd/system/watchdog.service", "/etc/systemd/system/watchdog.service", debConfigDir, debStateDir} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists: watchdog is installed on this host by hand, and the test would replace and then purge it; remove it first, or run the test on another machine", p)
		}
	}
}

// debNoStartPolicy installs a policy-rc.d that refuses every start (as
// `make deps` does), unless the host has one: on a host where systemd
// runs, the postinst would otherwise start the daemon.
func debNoStartPolicy(t *testing.T) {
	t.Helper()
	if _, err := os.Lstat(debPolicyRCD); err == nil {
		return
	}
	if err := os.WriteFile(debPolicyRCD, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
		t.Fatalf("write %s: %v", debPolicyRCD, err)
	}
	t.Cleanup(func() { os.Remove(debPolicyRCD) })
}

// debControl reads the package's control fields.
func debControl(t *testing.T, deb string) map[string]string {
	t.Helper()
	out, err := exec.Command("dpkg-deb", "--field", deb).Output()
	if err != nil {
		t.Fatalf("dpkg-deb --field %s: %v", deb, debStderr(err))
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, " ") {
			fields[k] = v
		}
	}
	return fields
}

// debStatus is dpkg's status of pkg ("install ok installed", "deinstall
// ok config-files"), or "" when dpkg knows nothing of it.
func debStatus(pkg string) string {
	out, err := exec.Command("dpkg-query", "--show", "--showformat=${Status}", pkg).Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if s == "unknown ok not-installed" {
		return ""
	}
	return s
}

func debQuery(t *testing.T, pkg, format string) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "--show", "--showformat="+format, pkg).Output()
	if err != nil {
		t.Fatalf("dpkg-query --show %s: %v", pkg, debStderr(err))
	}
	return string(out)
}

// debDpkg runs dpkg with no terminal to ask on, waiting (up to
// dpkgLockCeiling) while another dpkg or apt holds its lock.
func debDpkg(args ...string) ([]byte, error) {
	deadline := time.Now().Add(dpkgLockCeiling)
	for {
		cmd := exec.Command("dpkg", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("lock")) || time.Now().After(deadline) {
			return out, err
		}
		time.Sleep(time.Second)
	}
}

func debMustDpkg(t *testing.T, args ...string) {
	t.Helper()
	out, err := debDpkg(args...)
	if err != nil {
		t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("dpkg %s: ok", strings.Join(args, " "))
}

// debGetent returns the fields of name's line in the passwd or group
// database.
func debGetent(db, name string) ([]string, error) {
	out, err := exec.Command("getent", db, name).Output()
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(string(out)), ":"), nil
}

// debName is the name of a uid or gid, or the number when it has none.
func debName(db string, id uint32) string {
	s := strconv.FormatUint(uint64(id), 10)
	if f, err := debGetent(db, s); err == nil {
		return f[0]
	}
	return s
}

func debRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// debRun runs a command from / (so nothing is found in the checkout by
// accident) and returns its stdout; a failure fails t with its stderr.
func debRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	return debRunStdin(t, "", name, args...)
}

func debRunStdin(t *testing.T, stdin, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.String()
}

func debStderr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(err.Error() + ": " + strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

// debLintian runs Debian's own checker on the package: no error or
// warning but the ones deploy/deb/lintian-overrides justifies (issue 39),
// and the copyright and changelog Debian's policy asks of every package.
func debLintian(t *testing.T, deb string) {
	t.Helper()
	out, err := exec.Command("lintian", "--tag-display-limit", "0", deb).CombinedOutput()
	var tags []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if len(line) > 2 && line[1] == ':' && strings.ContainsRune("EWI", rune(line[0])) {
			tags = append(tags, line)
		}
	}
	if err != nil && len(tags) == 0 {
		t.Fatalf("lintian %s: %v\n%s", deb, err, out)
	}
	if len(tags) > 0 {
		t.Errorf("lintian: %d tags not justified in deploy/deb/lintian-overrides:\n%s", len(tags), strings.Join(tags, "\n"))
	}
	list, err := exec.Command("dpkg-deb", "-c", deb).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"./usr/share/doc/watchdog-sidecar/copyright", "./usr/share/doc/watchdog-sidecar/changelog.gz", "./usr/share/lintian/overrides/watchdog-sidecar"} {
		if !strings.Contains(string(list), f+"\n") {
			t.Errorf("the package has no %s", f)
		}
	}
}
