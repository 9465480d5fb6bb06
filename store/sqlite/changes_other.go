//go:build !linux

package sqlite

import "errors"

// No events to ask for here.
const (
	changeMask   = 0
	identityMask = 0
)

// watchFile has no inotify here: the reader of Changes polls, and the
// daemon's store watch checks the identity on its tick.
func watchFile(string, []string, uint32, func()) (func(), error) {
	return nil, errors.New("no file change events on this system")
}
