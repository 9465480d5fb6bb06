package main

import (
	"watchdog/probe"
	"watchdog/transitions"
)

// localIdentifier identifies this host and its processes for registration:
// an entity registered from here without a host id is claimed for this
// host, and a local pid gets its start time recorded so a reused pid can
// never pass for it later.
func localIdentifier() transitions.Identifier { return probe.NewHost() }
