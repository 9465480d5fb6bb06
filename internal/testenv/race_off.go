//go:build !race

package testenv

// RaceEnabled: the race detector is off (see race_on.go).
const RaceEnabled = false
