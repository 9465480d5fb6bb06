package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/config"
)

func newCheckConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file; every problem names its key",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := config.Load(args[0]); err != nil {
				// Every problem on its own line, each prefixed with the file,
				// like a compiler: an operator fixes them all in one pass.
				for _, line := range strings.Split(err.Error(), "\n") {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", args[0], line)
				}
				return withCode(1, nil)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", args[0])
			return nil
		},
	}
}
