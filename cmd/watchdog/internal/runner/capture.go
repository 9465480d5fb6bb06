package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// drainMax bounds what the final drain of a stream reads after the child
// ended: what the child left in the pipe is at most a pipe's buffer; a
// leftover that keeps writing must not keep the runner reading.
const drainMax = 1 << 20

// capture is one of the child's output streams passed through a pipe the
// runner owns: everything read is written on to dst, the runner's own
// stream, as it comes, and the end of it kept in keep (nil: none kept).
// The runner owns the pipe, not os/exec, so that a descendant that holds
// the stream open after the child's end (a background job) never keeps
// the runner waiting for the pipe to close.
type capture struct {
	r, w *os.File
	dst  io.Writer
	keep *tail
	done chan struct{}
	// broken is set once dst refused a write (a closed pipe): the read
	// end is then closed, so the child's next write fails as it would
	// have written to dst itself (EPIPE, or SIGPIPE).
	broken bool
}

// newCapture opens the pipe; start the copy once the child has its end.
func newCapture(dst io.Writer, keep *tail) (*capture, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("open a pipe for the command's output: %w", err)
	}
	return &capture{r: r, w: w, dst: dst, keep: keep, done: make(chan struct{})}, nil
}

// start closes the runner's copy of the child's end and copies until the
// stream ends, breaks, or finish stops it.
func (c *capture) start() {
	_ = c.w.Close()
	go func() {
		defer close(c.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := c.r.Read(buf)
			if n > 0 && !c.take(buf[:n]) {
				_ = c.r.Close() // the child's next write fails, as on dst
				return
			}
			if err != nil {
				return
			}
		}
	}()
}

// take passes p on and keeps its end; false once dst is broken.
func (c *capture) take(p []byte) bool {
	if c.keep != nil {
		_, _ = c.keep.Write(p)
	}
	if _, err := c.dst.Write(p); err != nil {
		c.broken = true
		return false
	}
	return true
}

// finish stops the copy after the child's end: what is in the pipe now
// (everything the child wrote before it exited) is still read and passed
// on, without waiting for the pipe to close, which a descendant left
// running may hold open. The pipe is closed then; such a descendant's
// later writes to it fail.
func (c *capture) finish() {
	_ = c.r.SetReadDeadline(time.Now())
	<-c.done
	defer c.r.Close()
	if c.broken {
		return
	}
	// The deadline stopped the copy, maybe before all that was in the
	// pipe: read the rest without waiting (the read end is non-blocking).
	_ = c.r.SetReadDeadline(time.Time{})
	rc, err := c.r.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	read := 0
	_ = rc.Read(func(fd uintptr) bool {
		for read < drainMax {
			n, err := unix.Read(int(fd), buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if n <= 0 || err != nil {
				return true // drained (EAGAIN), or the end of the stream
			}
			read += n
			if !c.take(buf[:n]) {
				return true
			}
		}
		return true
	})
}
