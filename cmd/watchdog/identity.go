package main

import (
	"os"

	"watchdog/probe"
)

// localHost is this machine as the probe sees it. WATCHDOG_HOST_ID must
// match the daemon's host_id, or what the CLI registers is never swept.
func localHost() *probe.Host {
	h := probe.NewHost()
	h.HostIDOverride = os.Getenv("WATCHDOG_HOST_ID")
	return h
}
