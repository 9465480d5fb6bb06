// Command watchdog is the sidecar agent and its ad-hoc command line: one
// binary for the daemon (serve), probes, the exec wrapper and the commands
// an orchestrator or operator needs.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/internal/ctlesc"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// exitError carries a specific exit code up to main; its message, if any,
// is the one error line.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the code to exit with.
func (e *exitError) ExitCode() int { return e.code }

// exitCoder is an error that decides the exit code.
type exitCoder interface{ ExitCode() int }

// withCode wraps err so that the process exits with code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// output prints v as indented JSON when asJSON, else its text.
func output(w io.Writer, asJSON bool, v any, text func() string) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	_, err := io.WriteString(w, text())
	return err
}

// usageError marks a mistake in the command line itself (exit 2).
func usageError(format string, args ...any) error {
	return withCode(2, fmt.Errorf(format, args...))
}

// run executes the command tree and returns the exit code: 0 success, 1 a
// refused or failed operation, 2 a usage error (probe has its own).
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	// Escape control characters in all output: what a client or a process
	// wrote may act on the terminal. exec's child gets the raw writers.
	out, errw := ctlesc.NewWriter(stdout), ctlesc.NewWriter(stderr)
	defer out.Flush()  //nolint:errcheck // the reader went away: nothing left to tell it
	defer errw.Flush() //nolint:errcheck // as above
	stderr = errw
	root.SetOut(out)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	err = explainUsage(cmd, err)
	code := 1
	var ec exitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	} else if isFlagError(err) {
		code = 2
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		fmt.Fprintf(stderr, "watchdog: %s\n", firstLine(msg))
	}
	return code
}

// explainUsage completes cobra's usage errors into one actionable line:
// the suggested command, or the usage line for a wrong argument count.
func explainUsage(cmd *cobra.Command, err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown command"):
		first := firstLine(msg)
		var suggestions []string
		for _, l := range strings.Split(msg, "\n")[1:] {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "Did you mean") && !strings.HasPrefix(l, "Run '") {
				suggestions = append(suggestions, l)
			}
		}
		if len(suggestions) > 0 {
			first += "; did you mean " + strings.Join(suggestions, " or ") + "?"
		}
		return usageError("%s (see %s --help)", first, cmd.CommandPath())
	case cmd != nil && cmd.Args != nil && (strings.HasPrefix(msg, "accepts ") || strings.HasPrefix(msg, "requires ")):
		return usageError("%s: %s; usage: %s (see %s --help)", strings.TrimPrefix(cmd.CommandPath(), "watchdog "), msg, cmd.UseLine(), cmd.CommandPath())
	}
	return err
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// isFlagError recognises cobra/pflag's own parse errors.
func isFlagError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "flag needs an argument", "invalid argument", "unknown command", "accepts ", "requires at least", "requires exactly", "bad flag syntax"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "watchdog",
		Short: "One normalized state per long-lived entity: probe, enforce, reap, alert",
		Long: `watchdog keeps one normalized state (lifecycle x health x delivery, with
reasons and evidence) per entity of this host: sessions, plays, workflows,
scheduled jobs. It runs as a daemon (watchdog serve) and every check also
runs ad hoc from this command line.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(
		newServeCmd(),
		newRegisterCmd(),
		newTransitionCmd(),
		newHeartbeatCmd(),
		newStatusCmd(),
		newAttentionCmd(),
		newSnoozeCmd(),
		newDismissCmd(),
		newProbeCmd(),
		newReapCmd(),
		newExecCmd(),
		newReasonsCmd(),
		newGraphCmd(),
		newCheckConfigCmd(),
		newVersionCmd(),
	)
	return root
}
