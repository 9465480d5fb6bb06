package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// drainMax bounds the final drain after the child ended: a leftover that
// keeps writing must not keep the runner reading.
const drainMax = 1 << 20

// capture is one of the child's output streams through a pipe the runner
// owns, copied to dst and its tail kept in keep (nil: none). Not os/exec's
// pipe: a descendant holding it open must never keep the runner waiting.
type capture struct {
	r, w *os.File
	dst  io.Writer
	keep *tail
	done chan struct{}
	// broken: dst refused a write; the read end is closed, so the child's next write fails too.
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

// finish stops the copy after the child's end: what is in the pipe now is
// still passed on, without waiting for a close a leftover may hold off.
func (c *capture) finish() {
	_ = c.r.SetReadDeadline(time.Now())
	<-c.done
	defer c.r.Close()
	if c.broken {
		return
	}
	// The deadline may have stopped the copy early: read the rest, non-blocking.
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
