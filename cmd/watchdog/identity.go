package main

import "watchdog/transitions"

// localIdentifier identifies local processes for registration.
func localIdentifier() transitions.Identifier { return nil }
