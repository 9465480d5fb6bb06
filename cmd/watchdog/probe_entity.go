package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

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
		return probeExitUnknown
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
	// permission denied, and no heartbeat to go by): exit 3, as the ad-hoc
	// probe does for an unknown liveness. Otherwise the severity decides.
	code := probeExitOK
	switch {
	case p.Entity.Health == state.HealthUnknown:
		code = probeExitUnknown
	case ns.Severity == state.SeverityCritical:
		code = probeExitCritical
	case ns.Severity == state.SeverityWarning:
		code = probeExitWarning
	}

	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ns); err != nil {
			return 0, fmt.Errorf("probe: write output: %w", err)
		}
		return code, nil
	}
	label := strings.ToUpper(string(ns.Severity))
	if code == probeExitUnknown {
		label = "UNKNOWN"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - %s\n", label, transitions.Display(p.Entity, ns))
	for _, r := range ns.Reasons {
		fmt.Fprintf(&b, "  reason %s: %s\n", r.Code, r.Message)
	}
	if p.Checked {
		for _, ev := range p.Result.Evidence() {
			fmt.Fprintf(&b, "  evidence: %s\n", ev.Detail)
		}
	}
	if p.Written {
		fmt.Fprintf(&b, "  recorded: health %s, delivery %s\n", p.Entity.Health, p.Entity.Delivery)
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return 0, fmt.Errorf("probe: write output: %w", err)
	}
	return code, nil
}
