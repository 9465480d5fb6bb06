package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal pair: the master the test types
// into, the slave a process gets as its controlling terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal slaves here (is devpts mounted?): %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// sigintCounter is the child of TestExecCtrlCReachesChildOnce (this test
// binary, re-executed): it says "ready", counts the SIGINTs it gets until
// a second after the first, and exits with 10 + that count.
func sigintCounter() {
	c := make(chan os.Signal, 8)
	signal.Notify(c, syscall.SIGINT)
	fmt.Println("ready")
	<-c
	n := 1
	quiet := time.After(time.Second)
	for {
		select {
		case <-c:
			n++
		case <-quiet:
			os.Exit(10 + n)
		}
	}
}

// TestExecCtrlCReachesChildOnce runs exec on a real pseudo-terminal, as
// its controlling terminal and in its foreground, and types Ctrl-C. The
// terminal signals the whole foreground group, child included; exec must
// not forward a second SIGINT (many programs read a second Ctrl-C as
// "quit now, skip the cleanup"). The child counts what it got.
func TestExecCtrlCReachesChildOnce(t *testing.T) {
	master, slave := openPTY(t)
	db := filepath.Join(t.TempDir(), "w.db")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "exec", "--db", db, "--id", "tty", "--", self)
	cmd.Env = append(os.Environ(), "WATCHDOG_TEST_SIGINT_COUNTER=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own with the pty as controlling terminal: exec
	// leads the terminal's foreground process group, as in a shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	slave.Close()

	out := make(chan string, 64)
	go func() {
		r := bufio.NewReader(master)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				out <- strings.TrimSpace(line)
			}
			if err != nil {
				close(out)
				return
			}
		}
	}()
	var seen []string
	for ready := false; !ready; {
		select {
		case l, ok := <-out:
			if !ok {
				t.Fatalf("terminal closed before the child was ready: %q", seen)
			}
			seen = append(seen, l)
			ready = l == "ready"
		case <-time.After(ceiling):
			t.Fatalf("child never said ready within %s: %q", ceiling, seen)
		}
	}
	if _, err := master.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 11 {
		t.Fatalf("exec ended with %v, want 11 (the child got exactly one SIGINT; 12 means it got two)", err)
	}
	e, _ := execEntity(t, db, "tty")
	if e.LifecycleOr("") != "failed" {
		t.Errorf("recorded %s, want failed (exit 11)", e.LifecycleOr(""))
	}
}
