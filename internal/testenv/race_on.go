//go:build race

package testenv

// RaceEnabled: the race detector changes allocation counts (sync.Pool
// drops items at random under it), so allocation tests skip.
const RaceEnabled = true
