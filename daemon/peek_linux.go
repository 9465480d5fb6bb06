package daemon

import (
	"bytes"
	"net"
	"syscall"
)

// headersWaiting reports whether c's socket already holds a whole
// request's headers (a blank line within the first peekBytes), read
// without consuming them or blocking: what a client that is not a
// slowloris sends at once, and, under a flood, has sent long before its
// connection is accepted. One recvfrom per accepted connection.
func headersWaiting(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [peekBytes]byte
	n := 0
	err = raw.Read(func(fd uintptr) bool {
		n, _, _ = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait: nothing there yet is an answer too
	})
	return err == nil && n > 0 && bytes.Contains(buf[:n], []byte("\r\n\r\n"))
}
