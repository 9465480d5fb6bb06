//go:build !linux

package proctree

import "fmt"

// event is never read off Linux.
type event struct {
	what        uint32
	stamp       uint64
	pid, parent int
	status      uint32
}

const (
	procEventFork = 0x00000001
	procEventExit = 0x80000000
)

// conn does not exist off Linux: the process connector is Linux's.
type conn struct{}

func openConn() (*conn, error) {
	return nil, fmt.Errorf("process connector: %w: not Linux", ErrUnavailable)
}

func (c *conn) read(handle func(ev *event), lost func()) error { return nil }

func (c *conn) close() error { return nil }
