package state

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"watchdog/internal/unixtime"
)

// ExitStatus is how a watched process ended, as the kernel reported it:
// evidence, never a lifecycle. Exactly one of code and signal is set.
type ExitStatus struct {
	// Code is the exit code when Signal is 0.
	Code int
	// Signal is the killing signal's Linux number; 0 when it exited.
	Signal int
	// At is when the death was seen.
	At time.Time
}

// Killed reports whether a signal ended the process.
func (x ExitStatus) Killed() bool { return x.Signal != 0 }

// AppendText appends the evidence phrase for pid, allocation-cheap.
func (x ExitStatus) AppendText(b []byte, pid int) []byte {
	b = append(b, "pid "...)
	b = strconv.AppendInt(b, int64(pid), 10)
	return x.AppendHow(append(b, ' '))
}

// AppendHow appends the phrase without the pid.
func (x ExitStatus) AppendHow(b []byte) []byte {
	if x.Killed() {
		b = append(b, "was killed by "...)
		return appendSignalName(b, x.Signal)
	}
	b = append(b, "exited with status "...)
	return strconv.AppendInt(b, int64(x.Code), 10)
}

// Text is AppendText as a string.
func (x ExitStatus) Text(pid int) string { return string(x.AppendText(nil, pid)) }

// How is the phrase without the pid: "exited with status 3".
func (x ExitStatus) How() string { return string(x.AppendHow(nil)) }

// Short is the status in a table cell: "exit 3" or "SIGKILL".
func (x ExitStatus) Short() string {
	if x.Killed() {
		return SignalName(x.Signal)
	}
	return "exit " + strconv.Itoa(x.Code)
}

// ExitNotAvailable is the phrase for an exit status the kernel did not keep.
const ExitNotAvailable = "exit status not available"

// signalNames are Linux signals 1-31, shared by the common architectures.
var signalNames = [...]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2",
	13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT",
	19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU",
	25: "SIGXFSZ", 26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR",
	31: "SIGSYS",
}

// SignalName is the name of a Linux signal number; an unknown one is "SIG<n>".
func SignalName(sig int) string { return string(appendSignalName(nil, sig)) }

func appendSignalName(b []byte, sig int) []byte {
	if sig > 0 && sig < len(signalNames) {
		return append(b, signalNames[sig]...)
	}
	return strconv.AppendInt(append(b, "SIG"...), int64(sig), 10)
}

// ParseSignal is SignalName backwards: "SIGKILL" or "SIG40" to its number.
func ParseSignal(name string) (int, error) {
	for n, s := range signalNames {
		if s != "" && s == name {
			return n, nil
		}
	}
	if rest, ok := strings.CutPrefix(name, "SIG"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 && n < 128 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("signal %q: not a signal name (SIGKILL, SIGTERM, ... or SIG<number>)", name)
}

type exitJSON struct {
	Code   *int          `json:"code"`
	Signal *string       `json:"signal"`
	At     unixtime.Time `json:"at"`
}

// MarshalJSON writes {"code", "signal", "at"}, the one not set as null.
func (x ExitStatus) MarshalJSON() ([]byte, error) {
	j := exitJSON{At: unixtime.Of(x.At)}
	if x.Killed() {
		name := SignalName(x.Signal)
		j.Signal = &name
	} else {
		code := x.Code
		j.Code = &code
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes; exactly one of code and
// signal must be set.
func (x *ExitStatus) UnmarshalJSON(b []byte) error {
	var j exitJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("exit_status: %w", err)
	}
	switch {
	case (j.Code == nil) == (j.Signal == nil):
		return fmt.Errorf("exit_status: exactly one of code and signal must be set")
	case j.Signal != nil:
		sig, err := ParseSignal(*j.Signal)
		if err != nil {
			return fmt.Errorf("exit_status: %w", err)
		}
		*x = ExitStatus{Signal: sig, At: j.At.Time}
	default:
		*x = ExitStatus{Code: *j.Code, At: j.At.Time}
	}
	return nil
}

// SameExit says whether a and b record the same end (code and signal).
func SameExit(a, b *ExitStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Code == b.Code && a.Signal == b.Signal
}
