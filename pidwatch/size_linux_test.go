package pidwatch

import (
	"testing"
	"unsafe"
)

// TestWatchSize holds a live process's watch to its size class (48
// bytes): what only a death needs stays behind its pointer (ADR-0052).
func TestWatchSize(t *testing.T) {
	if got := unsafe.Sizeof(watch{}); got > 48 {
		t.Errorf("watch is %d bytes, past the 48 size class", got)
	}
}
