package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"watchdog/api"
	"watchdog/state"
	"watchdog/store"
	"watchdog/target"
	"watchdog/transitions"
	"watchdog/unixtime"
	"watchdog/wire"
)

func newStatusCmd() *cobra.Command {
	var db, typ, severities string
	var asJSON bool
	c := &cobra.Command{
		Use:   "status",
		Short: "Table of entities with their display chain, most severe first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if typ != "" {
				canon, ok := transitions.CanonicalType(typ)
				if !ok {
					return usageError("--type: unknown entity type %q (known: %s)", typ, strings.Join(transitions.Types(), ", "))
				}
				typ = canon
			}
			want, err := state.ParseSeverities(severities, state.Severities)
			if err != nil {
				return usageError("--severity: %v", err)
			}
			ctx := cmd.Context()
			st, err := target.OpenStore(ctx, db, false)
			if err != nil {
				return err
			}
			defer st.Close()
			var rows func(store.Entity) ([]store.AuditRow, error)
			if asJSON {
				rows = func(e store.Entity) ([]store.AuditRow, error) { return st.Transitions(ctx, e.Type, e.ID) }
			}
			now := time.Now()
			items, err := api.ListEntities(ctx, st, api.EntityFilter{Type: typ, Severities: want}, now, rows)
			if err != nil {
				return err
			}
			wire.SortEntities(items)
			out := wire.EntityList{GeneratedAt: unixtime.Of(now), Total: len(items), Items: items}
			return output(cmd.OutOrStdout(), asJSON, out, out.Table)
		},
	}
	c.Flags().StringVar(&typ, "type", "", "only this entity type")
	c.Flags().StringVar(&severities, "severity", "", "only these severities, comma separated (critical,warning,info,neutral)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the entity read shape as JSON")
	addDBFlag(c, &db)
	return c
}
