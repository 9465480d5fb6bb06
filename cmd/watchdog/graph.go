package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"watchdog/transitions"
)

func newGraphCmd() *cobra.Command {
	var dot bool
	c := &cobra.Command{
		Use:     "graph TYPE",
		Short:   "Print an entity type's lifecycle graph (--dot for Graphviz)",
		Example: "  watchdog graph agent --dot | dot -Tpng -o agent.png",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g, err := transitions.Lookup(args[0])
			if err != nil {
				return usageError("%v", err)
			}
			if dot {
				fmt.Fprint(cmd.OutOrStdout(), g.DOT())
			} else {
				fmt.Fprint(cmd.OutOrStdout(), g.Text())
			}
			return nil
		},
	}
	c.Flags().BoolVar(&dot, "dot", false, "print Graphviz DOT")
	return c
}
