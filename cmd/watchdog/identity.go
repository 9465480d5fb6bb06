package main

import (
	"os"

	"watchdog/probe"
)

// localHost is this machine as the probe sees it. WATCHDOG_HOST_ID plays
// the config's host_id for the command line (which reads no config file):
// a host whose daemon runs with host_id set must give its CLI the same id,
// or what the CLI registers is claimed for another host and never swept.
func localHost() *probe.Host {
	h := probe.NewHost()
	h.HostIDOverride = os.Getenv("WATCHDOG_HOST_ID")
	return h
}
