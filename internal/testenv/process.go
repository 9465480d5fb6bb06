package testenv

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// Sleep starts a real `sleep 300` that the test owns: a live process with
// a pid, a start time and the test's uid. It is killed and reaped when the
// test ends; a test that kills it itself reaps it with Wait (the cleanup's
// second Wait then fails harmlessly).
func Sleep(t testing.TB) *exec.Cmd {
	t.Helper()
	return startSleep(t, exec.Command("sleep", "300"))
}

// SleepAs is Sleep running as uid (and gid uid), for what depends on who
// owns a process. It skips the test when it cannot: not root, or the
// system refuses the credentials.
func SleepAs(t testing.TB, uid int) *exec.Cmd {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to start a process as another user")
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a process as uid %d: %v", uid, err)
	}
	t.Cleanup(func() { reap(cmd) })
	return cmd
}

func startSleep(t testing.TB, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	t.Cleanup(func() { reap(cmd) })
	return cmd
}

// reap kills cmd and waits for it; either may find it gone already,
// which is no failure at the end of a test.
func reap(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// DeadPID is the pid of a process that has exited and been reaped: a
// process that certainly existed and is gone. (The kernel may hand the
// pid out again; tests that care record an identity while it lives.)
func DeadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}
