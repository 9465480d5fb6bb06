package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"watchdog/probe"
	"watchdog/store"
)

// probeEntity is `watchdog probe --entity TYPE/ID`: probe a registered
// entity of this host now and judge it with the daemon's settings, print
// it like the ad-hoc probe, and, only with --record, record what changed
// (as one sweep would, and nothing when nothing did). It prints its own
// error line: the hook reports an exit code only.
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
		// Another host's entity, a legacy one or a schedule, said as such
		// (reaper.ErrOtherHost, reaper.ErrNotProbed), or a store failure.
		return 0, fmt.Errorf("probe: %w", err)
	}

	v := p.Verdict(time.Now())
	o.set.printNote(cmd.ErrOrStderr())
	return printVerdict(cmd.OutOrStdout(), v, asJSON, func(format string, a ...any) error {
		return fmt.Errorf("probe: "+format, a...)
	})
}
