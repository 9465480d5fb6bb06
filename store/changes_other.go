//go:build !linux

package store

import "errors"

// watchFile has no inotify here: the reader of Changes polls.
func watchFile(string, func()) (func(), error) {
	return nil, errors.New("no file change events on this system")
}
