package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"watchdog/probe"
	"watchdog/store"
)

// probeEntity is `watchdog probe --entity TYPE/ID`: probe and judge a
// registered entity with the daemon's settings, recording what changed
// only with --record. It prints its own error line.
func probeEntity(cmd *cobra.Command, ref string, asJSON bool) int {
	code, err := runProbeEntity(cmd, ref, asJSON)
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "watchdog: %s\n", firstLine(err.Error()))
		return probe.ExitUnknown
	}
	return code
}

func runProbeEntity(cmd *cobra.Command, ref string, asJSON bool) (int, error) {
	typ, id, err := parseRef(ref)
	if err != nil {
		return 0, fmt.Errorf("probe: --entity: %w", err)
	}
	o, err := openOneShot(cmd.Context(), cmd)
	if err != nil {
		return 0, fmt.Errorf("probe: %w", err)
	}
	defer o.st.Close()

	record, _ := cmd.Flags().GetBool("record")
	p, err := o.rp.ProbeOne(cmd.Context(), typ, id, record)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("probe: no entity %s/%s in %s", typ, id, o.st.Path())
	}
	if err != nil {
		// Another host's entity, a legacy one or a schedule, or a store failure.
		return 0, fmt.Errorf("probe: %w", err)
	}

	v := p.Verdict(time.Now())
	o.set.printNote(cmd.ErrOrStderr())
	return printVerdict(cmd.OutOrStdout(), v, asJSON, func(format string, a ...any) error {
		return fmt.Errorf("probe: "+format, a...)
	})
}
