package daemon

import (
	"bytes"
	"net"
	"syscall"
)

// headersWaiting reports whether c's socket already holds a whole request's
// headers, peeked without blocking: a flood's real client sent them long
// before it was accepted.
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
