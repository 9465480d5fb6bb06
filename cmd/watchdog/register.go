package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"watchdog/transitions"
	"watchdog/wire"
)

func newRegisterCmd() *cobra.Command {
	var db, server, file string
	c := &cobra.Command{
		Use:   "register --json FILE",
		Short: "Register (or update) an entity from a JSON document (- for stdin)",
		Example: `  watchdog register --json s-42.json
  echo '{"type":"session","id":"s-42","lifecycle":"running","pid":4242}' | watchdog register --json -
  WATCHDOG_SERVER=http://127.0.0.1:9715 watchdog register --json s-42.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError("register needs --json FILE (or - for stdin)")
			}
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				return err
			}
			var r io.Reader = cmd.InOrStdin()
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("read %s: %w", file, err)
				}
				defer f.Close()
				r = f
			}
			var body wire.Register
			if err := wire.Decode(r, &body, false); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			reg, err := body.Registration(transitions.ActorOrchestrator)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			// Validate first: a bad document must not even create an empty database.
			if err := transitions.CheckRegistration(reg); err != nil {
				return err
			}
			t, err := to.Open(cmd.Context(), true, false)
			if err != nil {
				return err
			}
			defer t.Close()
			e, created, err := t.Register(cmd.Context(), body, transitions.ActorOrchestrator)
			if err != nil {
				return to.Explain(err)
			}
			verb := "updated"
			if created {
				verb = "registered"
			}
			if _, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s/%s: %s\n", verb, e.Type, e.ID, e.Display); err != nil {
				return err
			}
			if e.Lifecycle != nil {
				warnLifecycleKept(cmd.ErrOrStderr(), created, body, *e.Lifecycle)
			}
			return nil
		},
	}
	c.Flags().StringVar(&file, "json", "", "register document (the wire shape of docs/reference/http-api.md); - reads stdin")
	addTargetFlags(c, &db, &server)
	return c
}

// warnLifecycleKept warns when a re-registration asked for a lifecycle
// the entity is not in: registering never moves one, and a silent
// "updated" would mislead.
func warnLifecycleKept(w io.Writer, created bool, body wire.Register, now string) {
	if created || !body.Lifecycle.Set || body.Lifecycle.Null || body.Lifecycle.Value == now {
		return
	}
	fmt.Fprintf(w, "watchdog: note: the lifecycle stays %s: re-registering does not change it (use watchdog transition)\n", now)
}
