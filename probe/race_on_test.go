//go:build race

package probe

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops items at random under it), so allocation tests skip.
const raceEnabled = true
