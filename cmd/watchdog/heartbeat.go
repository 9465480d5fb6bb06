package main

import (
	"github.com/spf13/cobra"
	"time"

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
			remote, err := resolveTarget(cmd, server)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if remote {
				cl, err := dialServer(server)
				if err != nil {
					return err
				}
				return remoteError(server, cl.Heartbeat(ctx, typ, id, progress))
			}
			st, err := openStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.RecordHeartbeat(ctx, typ, id, time.Now(), progress)
		},
	}
	c.Flags().StringVar(&progress, "progress", "", "short progress note, kept as evidence")
	addTargetFlags(c, &db, &server)
	return c
}
