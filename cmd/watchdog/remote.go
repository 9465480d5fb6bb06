package main

import (
	"os"

	"github.com/spf13/cobra"

	"watchdog/client"
)

// addServerFlag gives a writing command the --server flag (env
// WATCHDOG_SERVER): with it the command goes through a running daemon's
// API instead of opening the database, which on a hardened host the agents
// cannot do.
func addServerFlag(c *cobra.Command, server *string) {
	c.Flags().StringVar(server, "server", os.Getenv("WATCHDOG_SERVER"),
		"daemon API base URL, e.g. http://127.0.0.1:9715, used instead of --db (env WATCHDOG_SERVER; token from WATCHDOG_TOKEN_FILE)")
}

// dialServer returns a client of the daemon at server, with the bearer
// token read from WATCHDOG_TOKEN_FILE when that is set.
func dialServer(server string) (*client.Client, error) {
	tok, err := client.ReadToken(os.Getenv("WATCHDOG_TOKEN_FILE"))
	if err != nil {
		return nil, err
	}
	return client.New(server, tok), nil
}
