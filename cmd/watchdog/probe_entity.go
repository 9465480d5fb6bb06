package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/store"
	"watchdog/transitions"
)

// probeEntity is `watchdog probe --entity TYPE/ID`: probe a registered
// entity of this host now, record what changed (as one sweep would, and
// nothing when nothing did) and print it like the ad-hoc probe. It prints
// its own error line: the hook reports an exit code only.
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
	var cfgPath string
	if f := cmd.Flags().Lookup("config"); f != nil {
		cfgPath = f.Value.String()
	}
	o, err := openOneShot(cmd.Context(), cmd, cfgPath)
	if err != nil {
		return 0, fmt.Errorf("probe: %w", err)
	}
	defer o.st.Close()

	p, err := o.rp.ProbeOne(cmd.Context(), typ, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("probe: no entity %s/%s in %s", typ, id, o.st.Path())
	}
	if err != nil {
		// Another host's entity, a legacy one or a schedule, said as such
		// (reaper.ErrOtherHost, reaper.ErrNotProbed), or a store failure.
		return 0, fmt.Errorf("probe: %w", err)
	}

	ns := transitions.View(p.Entity, time.Now())
	// Health unknown is the probe's "could not decide" (no pid recorded,
	// permission denied, and no heartbeat to go by), as an unknown
	// liveness is for the ad-hoc probe.
	v := probe.Verdict{State: ns, Undecided: p.Entity.Health == state.HealthUnknown, Display: transitions.Display(p.Entity, ns), Reasons: ns.Reasons}
	if p.Checked {
		v.Evidence = p.Result.Evidence()
	}
	if p.Written {
		v.Notes = []string{fmt.Sprintf("recorded: health %s, delivery %s", p.Entity.Health, p.Entity.Delivery)}
	}
	return printVerdict(cmd.OutOrStdout(), v, asJSON, func(format string, a ...any) error {
		return fmt.Errorf("probe: "+format, a...)
	})
}
