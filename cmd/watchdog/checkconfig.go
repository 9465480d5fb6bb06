package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"watchdog/config"
	"watchdog/daemon"
)

func newCheckConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file; every problem names its key",
		Long: `Validate a configuration file: its keys and values, and what serve would
refuse on this host (an unreadable auth.token_file, a store directory that
does not exist). Every problem is printed, one per line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Inspect(args[0])
			if cfg != nil {
				err = errors.Join(err, daemon.Check(cfg))
			}
			if err != nil {
				// One line per problem, prefixed with the file, like a compiler.
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
