//go:build !linux

package pidwatch

// Watcher is unavailable off Linux: New returns ErrUnsupported and the
// caller polls every process instead.
type Watcher struct{}

// New returns ErrUnsupported: pidfds and epoll are Linux's.
func New() (*Watcher, error) { return nil, ErrUnsupported }

// Watch returns ErrUnsupported.
func (w *Watcher) Watch(key string, pid int, same func() bool) error { return ErrUnsupported }

// Forget does nothing.
func (w *Watcher) Forget(key string) {}

// Deaths is nil: nothing ever arrives.
func (w *Watcher) Deaths() <-chan Death { return nil }

// Resync is nil: nothing is ever dropped.
func (w *Watcher) Resync() <-chan struct{} { return nil }

// Overflows is 0.
func (w *Watcher) Overflows() uint64 { return 0 }

// SetMax does nothing.
func (w *Watcher) SetMax(n int) {}

// Max is 0.
func (w *Watcher) Max() int { return 0 }

// Len is 0.
func (w *Watcher) Len() int { return 0 }

// Alive is false: nothing is watched.
func (w *Watcher) Alive(key string, pid int) bool { return false }

// Close does nothing.
func (w *Watcher) Close() error { return nil }

// ExitStatusSupported is false where there are no pidfds.
func ExitStatusSupported() bool { return false }
