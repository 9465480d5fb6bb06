package testenv

import (
	"bytes"
	"sync"
)

// Buffer collects a child process's output while it runs: os/exec copies
// into it from its own goroutine while the test reads it (in Eventually's
// detail, say), so every access holds the lock.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
