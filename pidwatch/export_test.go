//go:build linux

package pidwatch

// SetQueueMaxForTest lowers w's queue bound (QueueMax) so that a test
// overflows it with a handful of real processes. It exists only in the
// package's test build: nothing else can change the bound.
func (w *Watcher) SetQueueMaxForTest(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queueMax = n
}

// pendingForTest is how many deaths wait for the reader: queued, and the
// one the sender is offering.
func (w *Watcher) pendingForTest() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(w.queue)
	if w.sending != nil {
		n++
	}
	return n
}
