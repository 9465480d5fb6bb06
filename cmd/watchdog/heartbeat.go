package main

import (
	"github.com/spf13/cobra"

	"watchdog/wire"
)

func newHeartbeatCmd() *cobra.Command {
	var db, server, progress string
	c := &cobra.Command{
		Use:   "heartbeat TYPE/ID",
		Short: "Record a heartbeat (with an optional progress note) for an entity",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			typ, id, err := parseRef(args[0])
			if err != nil {
				return err
			}
			if err := (wire.Heartbeat{Progress: progress}).Check(); err != nil {
				return usageError("--progress: %v", err)
			}
			to, err := resolveTarget(cmd, db, server)
			if err != nil {
				return err
			}
			t, err := to.Open(cmd.Context(), false, false)
			if err != nil {
				return err
			}
			defer t.Close()
			return to.Explain(t.Heartbeat(cmd.Context(), typ, id, progress))
		},
	}
	c.Flags().StringVar(&progress, "progress", "", "short progress note, kept as evidence")
	addTargetFlags(c, &db, &server)
	return c
}
