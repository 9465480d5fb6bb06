package live

import (
	"testing"
	"unsafe"
)

// TestRecordSize holds the record to its size class: a field added to
// it, or a small one moved from beside the others, costs every entity a
// class (32 bytes or more; ADR-0052).
func TestRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(record{}); got > 320 {
		t.Errorf("record is %d bytes, past the 320 size class", got)
	}
}
