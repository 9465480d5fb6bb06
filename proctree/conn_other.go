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
type conn struct{ filterErr error }

// filterMax is the Linux filter's room; nothing is filtered here.
const filterMax = 1 << 16

func openConn(bool) (*conn, error) {
	return nil, fmt.Errorf("process connector: %w: not Linux", ErrUnavailable)
}

func (c *conn) read(handle func(ev *event), lost, drained func()) error { return nil }

func (c *conn) filtered() bool { return false }

func (c *conn) keep(int) {}

func (c *conn) drop(int) {}

func (c *conn) open(bool) {}

func (c *conn) close() error { return nil }

func (c *conn) unfilter(error) {}

func (c *conn) closeFilter() {}
