package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"watchdog/probe"
	"watchdog/state"
	"watchdog/unixtime"
	"watchdog/wire"
)

// Exit codes of `watchdog probe`, those of a monitoring plugin.
const (
	probeExitOK       = 0 // neutral or info
	probeExitWarning  = 1
	probeExitCritical = 2
	probeExitUnknown  = 3 // could not decide: bad arguments, liveness unknown
)

// maxContractBytes bounds a --contract file: a contract is a short list.
const maxContractBytes = 1 << 20

// probeEntityFunc probes a registered entity (`--entity TYPE/ID`) and
// returns the exit code; it has printed its output (probe_entity.go). A
// variable so tests can watch the flag handling without a store.
var probeEntityFunc = probeEntity

type probeOptions struct {
	pid           string
	startTime     string
	heartbeat     string
	idleAfter     string
	stalledAfter  string
	artifactsRoot string
	artifacts     []string
	contract      string
	entity        string
	db            string
	config        string
	asJSON        bool
}

// probeFail is a probe that could not decide: exit 3 with one error line.
func probeFail(format string, args ...any) error {
	return withCode(probeExitUnknown, fmt.Errorf("probe: "+format, args...))
}

func newProbeCmd() *cobra.Command {
	var o probeOptions
	cmd := &cobra.Command{
		Use:   "probe --pid N [flags] | probe --entity TYPE/ID [--db FILE] [--config FILE] [--json]",
		Short: "Probe a process (no database needed) or a registered entity now",
		Long: `Probe a process now and classify it like the daemon would: liveness (with
its start time as identity), heartbeat age, artifact contract.

With --entity, probe a registered entity of this host with what the store
recorded about it (pid and start time, heartbeat, artifacts, lock files)
and the thresholds of --config (the SPEC defaults without it), and record
the findings as the daemon's sweep would: only when health, delivery or
reasons changed. A first-seen death starts terminal_grace now. An entity of
another host is not probed (exit 3).

The first line is "SEVERITY - display chain", then the reasons and the
evidence; --json prints the normalized state instead.

Exit codes, as a monitoring plugin: 0 neutral or info, 1 warning,
2 critical, 3 could not decide (bad arguments, permission denied, pid
liveness unknown; with --entity: health unknown, an entity of another
host, a legacy entity or a schedule).`,
		Example: `  watchdog probe --pid 4242 --start-time 1716517000.12 --heartbeat /run/agents/s-42.hb
  watchdog probe --pid 4242 --artifacts-root /srv/runs/s-42 --artifact review.md --artifact 'logs/*.txt'
  watchdog probe --pid 4242 --contract contract.yaml --json
  watchdog probe --entity session/s-42 --db /var/lib/watchdog/watchdog.db`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return probeFail("unexpected argument %q (probe takes flags only)", args[0])
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			code, err := runProbe(cmd, o)
			if err != nil {
				return err
			}
			if code != probeExitOK {
				return withCode(code, nil) // the output says it all
			}
			return nil
		},
	}
	// Bad flags are "could not decide" (3) here, not the usage error (2)
	// of the other commands: a monitoring system reads 2 as critical.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return probeFail("%v (see %s --help)", err, c.CommandPath())
	})
	f := cmd.Flags()
	f.StringVar(&o.pid, "pid", "", "process id to probe (required unless --entity)")
	f.StringVar(&o.startTime, "start-time", "", "the process's recorded start time, Unix seconds (a fraction allowed); a different start time means the pid was reused")
	f.StringVar(&o.heartbeat, "heartbeat", "", "heartbeat `FILE` whose mtime is the last sign of life")
	f.StringVar(&o.idleAfter, "idle-after", "", "heartbeat age that makes the process idle (default 10m)")
	f.StringVar(&o.stalledAfter, "stalled-after", "", "heartbeat age that makes the process stalled (default 60m)")
	f.StringVar(&o.artifactsRoot, "artifacts-root", "", "`DIR` the artifact paths are relative to (default the current directory)")
	f.StringArrayVar(&o.artifacts, "artifact", nil, "a required, non-empty file under the artifacts root (a glob matches if any file does); repeatable")
	f.StringVar(&o.contract, "contract", "", "artifact contract `FILE` (JSON or YAML, {\"artifacts\": [...]} as at registration)")
	f.StringVar(&o.entity, "entity", "", "probe the registered entity `TYPE/ID` instead of a bare pid")
	addDBFlag(cmd, &o.db)
	f.StringVar(&o.config, "config", "", "with --entity: YAML config `FILE` for thresholds, host_id and store.dsn (default: the SPEC defaults)")
	f.BoolVar(&o.asJSON, "json", false, "print the normalized state as JSON")
	return cmd
}

// runProbe returns the exit code of a probe that decided, or the error of
// one that could not.
func runProbe(cmd *cobra.Command, o probeOptions) (int, error) {
	if o.entity != "" {
		if o.pid != "" || o.heartbeat != "" || o.startTime != "" || len(o.artifacts) > 0 || o.contract != "" || o.artifactsRoot != "" {
			return 0, probeFail("--entity probes what the store recorded; it takes no --pid, --start-time, --heartbeat or artifact flags")
		}
		if o.idleAfter != "" || o.stalledAfter != "" {
			// The findings are stored: thresholds other than the daemon's
			// would make the two flip the entity back and forth.
			return 0, probeFail("--entity takes its thresholds from --config, not --idle-after or --stalled-after")
		}
		return probeEntityFunc(cmd, o.entity, o.asJSON), nil
	}
	if cmd.Flags().Changed("db") || o.config != "" {
		return 0, probeFail("--db and --config go with --entity; a --pid probe needs no database")
	}

	target, th, specs, err := o.target()
	if err != nil {
		return 0, err
	}
	h := probe.NewHost()
	if target.StartTime.IsZero() {
		// Without a recorded start time the pid cannot be told from a
		// newcomer, but its observed start still dates the heartbeat that
		// never came and newer_than_start.
		if id, err := h.Identify(target.PID); err == nil {
			target.StartedAt = id.StartTime
		}
	}
	now := time.Now()
	r := h.Probe(cmd.Context(), target, th, now)
	reasons := r.Reasons
	ns := state.Normalize("running", "", r.Health, r.Delivery, reasons, now)

	code := probeExitOK
	switch {
	case r.Liveness == probe.Unknown:
		code = probeExitUnknown
	case ns.Severity == state.SeverityCritical:
		code = probeExitCritical
	case ns.Severity == state.SeverityWarning:
		code = probeExitWarning
	}

	out := cmd.OutOrStdout()
	if o.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(ns); err != nil {
			return 0, probeFail("write output: %v", err)
		}
		return code, nil
	}
	label := strings.ToUpper(string(ns.Severity))
	if code == probeExitUnknown {
		label = "UNKNOWN"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - %s\n", label, state.DisplayChain(ns, state.ContractSubject(specs)))
	for _, reason := range reasons {
		fmt.Fprintf(&b, "  reason %s: %s\n", reason.Code, reason.Message)
	}
	for _, ev := range r.Evidence() {
		fmt.Fprintf(&b, "  evidence: %s\n", ev.Detail)
	}
	if _, err := io.WriteString(out, b.String()); err != nil {
		return 0, probeFail("write output: %v", err)
	}
	return code, nil
}

// target turns the flags into what the probe needs, checking each.
func (o probeOptions) target() (probe.Target, probe.Thresholds, []state.ArtifactSpec, error) {
	var t probe.Target
	th := probe.DefaultThresholds
	if o.pid == "" {
		return t, th, nil, probeFail("--pid is required (or --entity TYPE/ID)")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(o.pid))
	if err != nil || pid <= 0 {
		return t, th, nil, probeFail("--pid %q is not a process id (a positive integer)", o.pid)
	}
	t.PID = pid
	if o.startTime != "" {
		v, err := strconv.ParseFloat(strings.TrimSpace(o.startTime), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return t, th, nil, probeFail("--start-time %q is not a time in Unix seconds (e.g. 1716517000.12)", o.startTime)
		}
		t.StartTime = unixtime.FromSeconds(v)
	}
	if o.heartbeat == "" {
		t.NoHeartbeat = true
	} else {
		t.HeartbeatFile = o.heartbeat
	}
	for _, d := range []struct {
		flag, value string
		into        *time.Duration
	}{
		{"--idle-after", o.idleAfter, &th.IdleAfter},
		{"--stalled-after", o.stalledAfter, &th.StalledAfter},
	} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(strings.TrimSpace(d.value))
		if err != nil || v <= 0 {
			return t, th, nil, probeFail("%s %q is not a positive duration (try 10m)", d.flag, d.value)
		}
		*d.into = v
	}
	if th.IdleAfter >= th.StalledAfter {
		return t, th, nil, probeFail("--idle-after %v must be shorter than --stalled-after %v", th.IdleAfter, th.StalledAfter)
	}

	var specs []state.ArtifactSpec
	for _, p := range o.artifacts {
		specs = append(specs, state.ArtifactSpec{Path: p, Required: true, MinBytes: 1, Kind: state.ArtifactFile})
	}
	if o.contract != "" {
		more, err := readContract(o.contract)
		if err != nil {
			return t, th, nil, probeFail("--contract %s: %v", o.contract, err)
		}
		specs = append(specs, more...)
	}
	for _, s := range specs {
		if err := s.Validate(); err != nil {
			return t, th, nil, probeFail("%v", err)
		}
	}
	if len(specs) > 0 {
		root := o.artifactsRoot
		if root == "" {
			root = "."
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return t, th, nil, probeFail("--artifacts-root %q: %v", root, err)
		}
		t.ArtifactsRoot, t.Artifacts = abs, specs
	} else if o.artifactsRoot != "" {
		return t, th, nil, probeFail("--artifacts-root needs --artifact or --contract")
	}
	return t, th, specs, nil
}

// contractFile is a --contract file: the `artifacts` list of the
// registration wire shape, nothing else.
type contractFile struct {
	Artifacts []wire.Artifact `json:"artifacts" yaml:"artifacts"`
}

// readContract reads a JSON or YAML artifact contract (JSON when it starts
// with "{"), rejecting unknown fields.
func readContract(path string) ([]state.ArtifactSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxContractBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > maxContractBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxContractBytes)
	}
	var c contractFile
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		if dec.More() {
			return nil, errors.New("invalid JSON: data after the contract object")
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("empty contract")
			}
			return nil, fmt.Errorf("invalid YAML: %s", oneLine(err.Error()))
		}
	}
	if len(c.Artifacts) == 0 {
		return nil, errors.New(`no artifacts (want {"artifacts": [{"path": ...}]})`)
	}
	specs := make([]state.ArtifactSpec, 0, len(c.Artifacts))
	for _, a := range c.Artifacts {
		specs = append(specs, a.Spec())
	}
	return specs, nil
}

// oneLine folds a multi-line parser message (yaml lists one problem per
// line) into the one error line the CLI prints.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
