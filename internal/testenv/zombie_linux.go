package testenv

import (
	"errors"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// Zombie is the pid of a child of the test process that has exited and
// has not been reaped: /proc shows it in state Z until the test ends,
// when it is reaped.
func Zombie(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start true: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	pid := cmd.Process.Pid
	// WNOWAIT waits for the exit and leaves the child unreaped: from the
	// return on, it is a zombie, with no polling of /proc.
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return pid
		}
		if !errors.Is(err, unix.EINTR) {
			t.Fatalf("wait for pid %d to exit: %v", pid, err)
		}
	}
}
