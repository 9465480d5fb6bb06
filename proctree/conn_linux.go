//go:build linux

package proctree

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The process connector's constants (linux/connector.h, linux/cn_proc.h),
// which x/sys/unix lacks.
const (
	cnIdxProc = 0x1 // CN_IDX_PROC: the connector's index, and its multicast group
	cnValProc = 0x1 // CN_VAL_PROC

	procCnMcastListen = 1 // PROC_CN_MCAST_LISTEN
	procCnMcastIgnore = 2 // PROC_CN_MCAST_IGNORE

	procEventNone = 0x00000000 // the answer to a listen request (ack)
	procEventFork = 0x00000001
	procEventExec = 0x00000002
	procEventExit = 0x80000000

	// sizes: nlmsghdr, cn_msg, and proc_event's header before event_data.
	nlmsgLen    = unix.SizeofNlMsghdr
	cnMsgLen    = 20
	procHdrLen  = 16
	eventOffset = nlmsgLen + cnMsgLen

	// rcvBuf is the socket's receive buffer; beyond it the kernel drops events (ENOBUFS).
	rcvBuf = 4 << 20
)

// event is one process connector event the tree cares about (processes only).
type event struct {
	what  uint32
	stamp uint64 // the kernel's CLOCK_MONOTONIC at the event, ns
	// fork: parent and child; exit: pid and its wait status.
	pid, parent int
	status      uint32
}

// conn is a process connector socket subscribed to fork and exit events.
type conn struct {
	f *os.File
	// filt is the kernel-side filter (nil: every event passes); under the Tree's lock.
	filt *filter
	// filterErr says why there is no filter.
	filterErr error
}

// openConn opens the connector and subscribes; without CAP_NET_ADMIN in the
// initial namespaces the error wraps ErrUnavailable.
func openConn(filtered bool) (*conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_CONNECTOR)
	if err != nil {
		return nil, unavailable("open the process connector socket", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = unix.Close(fd)
		}
	}()
	// FORCE lifts the buffer over rmem_max, which root may.
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: cnIdxProc}); err != nil {
		return nil, unavailable("bind to the process connector's group", err)
	}
	// First the plain request, whose ack says whether we may listen; then the
	// one narrowed to fork and exit, which needs no answer.
	seq := uint32(time.Now().UnixNano())
	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	if err := unix.Sendto(fd, controlMsg(seq, procCnMcastListen, 0), 0, kernel); err != nil {
		return nil, unavailable("subscribe to process events", err)
	}
	if err := awaitAck(fd, seq); err != nil {
		return nil, err
	}
	if err := unix.Sendto(fd, controlMsg(seq+1, procCnMcastListen, procEventFork|procEventExit), 0, kernel); err != nil {
		return nil, fmt.Errorf("filter process events: %w", err)
	}
	c := &conn{}
	if filtered {
		// After the ack, which the filter would not let through.
		c.filt, c.filterErr = newFilter()
		if c.filterErr == nil {
			if c.filterErr = c.filt.attach(fd); c.filterErr != nil {
				c.filt.close()
				c.filt = nil
			}
		}
	} else {
		c.filterErr = errors.New("not wanted")
	}
	c.f = os.NewFile(uintptr(fd), "proc-connector")
	ok = true
	return c, nil
}

func (c *conn) filtered() bool { return c.filt != nil }

// keep lets pid's forks and exit through the filter. A map that refuses it
// ends the filtering: the Tree stays exact at the old cost.
func (c *conn) keep(pid int) {
	if c.filt == nil {
		return
	}
	if err := c.filt.add(pid); err != nil {
		c.unfilter(err)
	}
}

func (c *conn) drop(pid int) {
	if c.filt == nil {
		return
	}
	if err := c.filt.del(pid); err != nil {
		c.unfilter(err)
	}
}

// open sets or clears the filter's open flag (everything let through).
func (c *conn) open(on bool) {
	if on {
		c.keep(0)
	} else {
		c.drop(0)
	}
}

// closeFilter releases the filter at the Tree's Close.
func (c *conn) closeFilter() {
	if c.filt != nil {
		c.filt.close()
		c.filt = nil
		c.filterErr = errors.New("closed")
	}
}

// unfilter detaches the filter for good, saying why.
func (c *conn) unfilter(why error) {
	rc, err := c.f.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DETACH_BPF, 0)
		})
	}
	if err != nil {
		why = fmt.Errorf("%w; detach: %w", why, err)
	}
	c.filt.close()
	c.filt = nil
	c.filterErr = why
}

// unavailable wraps err with ErrUnavailable when it says we may not listen.
func unavailable(what string, err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPROTONOSUPPORT) ||
		errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// controlMsg is a PROC_CN_MCAST_LISTEN or _IGNORE request. With events
// (Linux ≥ 6.6) the kernel sends only those; an older kernel ignores that
// request. Without events every kernel acks it, but a filtered listener
// never sees the ack: hence openConn's two steps.
func controlMsg(seq, op, events uint32) []byte {
	payload := 4
	if events != 0 {
		payload = 8
	}
	b := make([]byte, nlmsgLen+cnMsgLen+payload)
	le := binary.NativeEndian
	le.PutUint32(b[0:], uint32(len(b)))       // nlmsg_len
	le.PutUint16(b[4:], unix.NLMSG_DONE)      // nlmsg_type
	le.PutUint32(b[8:], seq)                  // nlmsg_seq
	le.PutUint32(b[12:], uint32(os.Getpid())) // nlmsg_pid
	c := b[nlmsgLen:]
	le.PutUint32(c[0:], cnIdxProc)
	le.PutUint32(c[4:], cnValProc)
	le.PutUint32(c[8:], seq)
	// The answer carries ack+1 back: how awaitAck tells ours from others'.
	le.PutUint32(c[12:], seq)
	le.PutUint16(c[16:], uint16(payload))
	le.PutUint32(c[20:], op)
	if events != 0 {
		le.PutUint32(c[24:], events)
	}
	return b
}

// ackWait bounds the wait for the kernel's answer, so a connector that
// never answers cannot hold the daemon's start.
const ackWait = 5 * time.Second

// awaitAck reads until the kernel's answer to our subscription.
func awaitAck(fd int, seq uint32) error {
	deadline := time.Now().Add(ackWait)
	buf := make([]byte, 4096)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("subscribe to process events: %w: no answer within %s", ErrUnavailable, ackWait)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("subscribe to process events: poll: %w", err)
		}
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOBUFS) {
			continue
		}
		if err != nil {
			return unavailable("subscribe to process events: read the answer", err)
		}
		for msg := range messages(buf[:n]) {
			if len(msg) < eventOffset+procHdrLen+8 {
				continue
			}
			le := binary.NativeEndian
			if le.Uint32(msg[nlmsgLen+12:]) != seq+1 || le.Uint32(msg[eventOffset:]) != procEventNone {
				continue // an event, or another listener's answer
			}
			if e := unix.Errno(le.Uint32(msg[eventOffset+procHdrLen:])); e != 0 {
				return unavailable("subscribe to process events", e)
			}
			return nil
		}
	}
}

func messages(b []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) >= nlmsgLen {
			l := int(binary.NativeEndian.Uint32(b))
			if l < nlmsgLen || l > len(b) {
				return
			}
			if !yield(b[:l]) {
				return
			}
			l = (l + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1)
			if l >= len(b) {
				return
			}
			b = b[l:]
		}
	}
}

// parse reads one netlink message into ev; false for what the tree ignores.
func parse(msg []byte, ev *event) bool {
	if len(msg) < eventOffset+procHdrLen+8 {
		return false
	}
	le := binary.NativeEndian
	if le.Uint32(msg[nlmsgLen:]) != cnIdxProc || le.Uint32(msg[nlmsgLen+4:]) != cnValProc {
		return false
	}
	p := msg[eventOffset:]
	ev.what = le.Uint32(p)
	ev.stamp = le.Uint64(p[8:])
	d := p[procHdrLen:]
	switch ev.what {
	case procEventFork: // parent_pid, parent_tgid, child_pid, child_tgid
		if len(d) < 16 {
			return false
		}
		child, childTgid := int(int32(le.Uint32(d[8:]))), int(int32(le.Uint32(d[12:])))
		if child != childTgid {
			return false // a new thread, not a process
		}
		ev.pid, ev.parent = child, int(int32(le.Uint32(d[4:])))
		return true
	case procEventExit: // process_pid, process_tgid, exit_code, exit_signal, ...
		if len(d) < 16 {
			return false
		}
		pid, tgid := int(int32(le.Uint32(d[0:]))), int(int32(le.Uint32(d[4:])))
		if pid != tgid {
			return false // a thread ended, not its process
		}
		ev.pid, ev.status = pid, le.Uint32(d[8:])
		return true
	}
	return false
}

// Batching: recvmmsg reads up to batchLen datagrams, and a wake-up that
// read something pauses for coalesce so a storm comes in batches; a lone
// event is read at once (ADR-0043).
const (
	batchLen = 64
	slotLen  = 256
	coalesce = 5 * time.Millisecond
)

// read calls handle for every event until the socket fails or is closed;
// lost is called on ENOBUFS.
func (c *conn) read(handle func(ev *event), lost, drained func()) error {
	rc, err := c.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("process connector: %w", err)
	}
	bufs := make([]byte, batchLen*slotLen)
	iovs := make([]unix.Iovec, batchLen)
	msgs := make([]unix.Mmsghdr, batchLen)
	for i := range msgs {
		iovs[i].Base = &bufs[i*slotLen]
		iovs[i].SetLen(slotLen)
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.SetIovlen(1)
	}
	var ev event
	var rerr error
	for {
		got := 0
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&msgs[0])), batchLen, unix.MSG_DONTWAIT, 0, 0)
				switch {
				case errno == 0:
				case errno == unix.EAGAIN:
					drained()
					// Drained: wait in the poller, or leave for a storm's pause.
					return got > 0
				case errno == unix.EINTR:
					continue
				case errno == unix.ENOBUFS:
					lost()
					continue
				default:
					rerr = fmt.Errorf("read the process connector: %w", errno)
					return true
				}
				for i := range int(n) {
					b := bufs[i*slotLen : i*slotLen+min(int(msgs[i].Len), slotLen)]
					for msg := range messages(b) {
						if parse(msg, &ev) {
							handle(&ev)
						}
					}
					got++
				}
			}
		})
		if err != nil {
			return fmt.Errorf("read the process connector: %w", err)
		}
		if rerr != nil {
			return rerr
		}
		if got > 0 {
			time.Sleep(coalesce)
		}
	}
}

// close unsubscribes and closes the socket. The IGNORE matters: the kernel
// builds process events while any listener is counted.
func (c *conn) close() error {
	rc, err := c.f.SyscallConn()
	if err == nil {
		_ = rc.Write(func(fd uintptr) bool {
			_ = unix.Sendto(int(fd), controlMsg(0, procCnMcastIgnore, 0), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
			return true
		})
	}
	return c.f.Close()
}
