package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"watchdog/store/sqlite"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "watchdog %s (%s, schema v%d)\n", version, goVersion(), sqlite.SchemaVersion())
			return nil
		},
	}
}

func goVersion() string { return runtime.Version() }
