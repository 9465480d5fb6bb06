package runner

import (
	"bytes"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCaptureFinishDoesNotWaitForHolders: a descendant left running that
// holds the child's stream open must not keep the runner waiting for the
// pipe to close; what was written before the end is still passed on and
// kept, and the holder's later writes fail (the pipe is closed), as they
// would once the runner exits.
func TestCaptureFinishDoesNotWaitForHolders(t *testing.T) {
	var dst bytes.Buffer
	keep := newTail(TailBytes)
	c, err := newCapture(&dst, keep)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(c.w.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	holder := os.NewFile(uintptr(fd), "holder") // the leftover's copy
	defer holder.Close()
	if _, err := c.w.Write([]byte("written by the child before its end\n")); err != nil {
		t.Fatal(err)
	}
	c.start() // closes the runner's own copy of the write end
	c.finish()
	if got := dst.String(); got != "written by the child before its end\n" {
		t.Errorf("passed on %q", got)
	}
	if got := keep.text(); got != dst.String() {
		t.Errorf("kept %q", got)
	}
	if _, err := holder.Write([]byte("later")); err == nil {
		t.Error("a write after the end reached a closed pipe without error")
	}
}

// TestCaptureBrokenDestination: when the runner's own stream refuses a
// write (a closed pipe), the capture closes the child's pipe, so the
// child's next write fails as it would have on that stream itself.
func TestCaptureBrokenDestination(t *testing.T) {
	dr, dw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dr.Close() // nobody reads the runner's stream
	defer dw.Close()
	c, err := newCapture(dw, nil)
	if err != nil {
		t.Fatal(err)
	}
	child := c.w
	fd, err := unix.Dup(int(child.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(fd), "child")
	defer w.Close()
	c.start()
	if _, err := w.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	<-c.done // the copy stopped at the broken destination
	if _, err := w.Write([]byte("second")); err == nil {
		t.Error("the child's write succeeded after its destination broke")
	}
	c.finish()
}
