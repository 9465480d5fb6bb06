package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"watchdog/state"
)

func newReasonsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "reasons",
		Short: "Print the reason-code registry",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all := state.Reasons()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CODE\tMEANING")
			for _, r := range all {
				fmt.Fprintf(tw, "%s\t%s\n", r.Code, r.Doc)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}
