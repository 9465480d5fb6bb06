package live

import (
	"testing"
	"unsafe"
)

// TestRecordSize holds the record to its size class: a field added to
// it, or a small one moved from beside the others, costs every entity a
// class (32 bytes or more; ADR-0052).
func TestRecordSize(t *testing.T) {
	if got := unsafe.Sizeof(record{}); got > 240 {
		t.Errorf("record is %d bytes, past the 240 size class", got)
	}
}

// TestReasonSize holds a finding to three words: a handle to its shared
// shape, its first time, its tail (nil for most); one finding is then a
// 24-byte allocation where it was 176 (ADR-0052).
func TestReasonSize(t *testing.T) {
	if got := unsafe.Sizeof(reasonRec{}); got > 24 {
		t.Errorf("reasonRec is %d bytes, past 24", got)
	}
}
