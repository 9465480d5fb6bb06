//go:build linux

package pidwatch

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/internal/deadline"
)

// Watcher holds one pidfd per watched key in one epoll set, with one
// goroutine in epoll_wait (an idle Watcher costs no CPU). A sender
// goroutine hands deaths over an unbuffered channel, so the epoll loop
// never waits for the reader and Forget can withdraw a death not yet taken.
type Watcher struct {
	epfd   int
	wakefd int
	out    chan Death
	stop   chan struct{} // closed by Close: the sender gives up its death
	looped chan struct{} // closed when the epoll goroutine has returned
	sent   chan struct{} // closed when the sender goroutine has returned

	mu      sync.Mutex
	cond    *sync.Cond // on mu: the queue grew, or the sender let go of a death
	closed  bool
	failed  error // epoll_wait's error, when the loop stopped on one
	nextID  uint64
	max     int // the pidfd cap (SetMax); 0: none
	opening int // Watch calls between their slot and their registration
	byKey   map[string]*watch
	byID    map[uint64]*watch
	queue   []Death
	sending *Death        // the death the sender is offering the reader now
	abort   chan struct{} // closed to make the sender drop sending

	// queueMax bounds queue: QueueMax, lowered only by tests.
	queueMax int
	// resync holds one token while a drop is unannounced: drops coalesce.
	resync    chan struct{}
	overflows atomic.Uint64 // deaths dropped at a full queue, ever
}

// watch is one key's pidfd. Its id, not the fd number, is the epoll data:
// a closed fd's number may be reused before a stale event is handled.
type watch struct {
	key string
	pid int32
	fd  int32
	id  uint64
	// died is set when the pidfd turned readable.
	died *dying
}

// dying is what a watch keeps from the death until its exit status.
type dying struct {
	at    time.Time // when the pidfd turned readable
	tries int       // exit status reads after the first
	timer *deadline.Alarm
}

// wakeID is the eventfd's epoll data; watches count from 1.
const wakeID = 0

// exitChecks are when, after the death, the exit status is read again.
var exitChecks = []time.Duration{
	5 * time.Millisecond,
	25 * time.Millisecond,
	125 * time.Millisecond,
	625 * time.Millisecond,
	1250 * time.Millisecond,
	ExitWait,
}

// New starts a Watcher, or returns ErrUnsupported without pidfd_open.
func New() (*Watcher, error) {
	self, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("pidfd_open of our own pid: %w: %w", ErrUnsupported, err)
		}
		return nil, fmt.Errorf("pidfd_open of our own pid: %w", err)
	}
	_ = unix.Close(self)

	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setEventID(&ev, wakeID)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		_ = unix.Close(wakefd)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("add the eventfd to epoll: %w", err)
	}
	w := &Watcher{
		epfd:   epfd,
		wakefd: wakefd,
		out:    make(chan Death),
		stop:   make(chan struct{}),
		looped: make(chan struct{}),
		sent:   make(chan struct{}),
		byKey:  make(map[string]*watch),
		byID:   make(map[uint64]*watch),

		queueMax: QueueMax,
		resync:   make(chan struct{}, 1),
	}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	go w.send()
	return w, nil
}

// Watch opens a pidfd for pid, asks same whether the process behind it is
// the one recorded, and watches it under key. same runs after the open, so
// a yes pins that very process; it must not call back into the Watcher.
// No fd is left open after an error; a zombie's Death follows at once.
func (w *Watcher) Watch(key string, pid int, same func() bool) error {
	if pid <= 0 {
		return fmt.Errorf("watch pid %d: not a process id", pid)
	}
	if same == nil {
		return fmt.Errorf("watch pid %d: no identity check given", pid)
	}
	// Take the slot before opening: concurrent Watches never exceed the cap.
	if err := w.takeSlot(key, pid); err != nil {
		return err
	}
	defer w.releaseSlot()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return openError(pid, err)
	}
	if !same() {
		dead := readable(fd)
		_ = unix.Close(fd)
		if dead {
			return fmt.Errorf("watch pid %d: %w", pid, ErrGone)
		}
		return fmt.Errorf("watch pid %d: %w", pid, ErrNotSame)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	// forgetLocked may release mu while waiting for the sender, and another
	// Watch of key may land: forget until none is left, orphaning no fd.
	for !w.closed && w.byKey[key] != nil {
		w.forgetLocked(key)
	}
	if w.closed {
		_ = unix.Close(fd)
		return fmt.Errorf("watch pid %d: %w", pid, ErrClosed)
	}
	if w.failed != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("watch pid %d: watcher stopped: %w", pid, w.failed)
	}
	w.nextID++
	wt := &watch{key: key, pid: int32(pid), fd: int32(fd), id: w.nextID}
	// One-shot: a dead pidfd stays readable while kept for its exit status.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT}
	setEventID(&ev, wt.id)
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
			return fmt.Errorf("watch pid %d: add to epoll: %w: %w", pid, ErrNoFD, err)
		}
		return fmt.Errorf("watch pid %d: add to epoll: %w", pid, err)
	}
	w.byKey[key] = wt
	w.byID[wt.id] = wt
	return nil
}

// SetMax caps the pidfds held at once (0: no cap), dead ones awaiting
// their exit status included; a Watch beyond it returns ErrBudget.
func (w *Watcher) SetMax(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max = max(n, 0)
}

// takeSlot reserves one pidfd under the cap for a Watch of key.
func (w *Watcher) takeSlot(key string, pid int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return fmt.Errorf("watch pid %d: %w", pid, ErrClosed)
	}
	if w.max > 0 {
		held := len(w.byID) + w.opening
		if w.byKey[key] != nil {
			held--
		}
		if held >= w.max {
			return fmt.Errorf("watch pid %d: %w (%d pidfds held, the cap)", pid, ErrBudget, w.max)
		}
	}
	w.opening++
	return nil
}

func (w *Watcher) releaseSlot() {
	w.mu.Lock()
	w.opening--
	w.mu.Unlock()
}

// Forget stops watching key and closes its fd; no Death for key reaches
// the reader after it returns (but one taken just before on another
// goroutine may: check keys against your table).
func (w *Watcher) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(key)
}

// Deaths is where deaths arrive, in the order seen. Never closed.
func (w *Watcher) Deaths() <-chan Death { return w.out }

// Resync receives a value after deaths were dropped at a full queue: the
// reader must look at every process it watches. Never closed.
func (w *Watcher) Resync() <-chan struct{} { return w.resync }

// Overflows counts the deaths dropped at a full queue since New.
func (w *Watcher) Overflows() uint64 { return w.overflows.Load() }

// Max is the cap SetMax set (0: none).
func (w *Watcher) Max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// Alive says whether key's watch holds pid's pidfd and no exit came on
// it: the sweep then reads nothing of /proc for it.
func (w *Watcher) Alive(key string, pid int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt := w.byKey[key]
	// A loop that stopped (closed, or epoll_wait failed) reports nothing:
	// then nothing is alive by its word.
	return wt != nil && int(wt.pid) == pid && wt.died == nil && !w.closed && w.failed == nil
}

// Len is how many keys hold a pidfd now, dead ones included.
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byKey)
}

// Close stops the Watcher and closes every fd; later calls return nil.
func (w *Watcher) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.stop)
	w.cond.Broadcast()
	var one [8]byte
	one[0] = 1 // any non-zero count wakes epoll_wait
	_, werr := unix.Write(w.wakefd, one[:])
	w.mu.Unlock()

	if werr == nil {
		<-w.looped
	}
	<-w.sent

	w.mu.Lock()
	for _, wt := range w.byID {
		w.dropLocked(wt)
	}
	w.queue = nil
	w.mu.Unlock()

	var errs []error
	if werr != nil {
		errs = append(errs, fmt.Errorf("wake the epoll loop: %w", werr))
	}
	if err := unix.Close(w.epfd); err != nil {
		errs = append(errs, fmt.Errorf("close epoll fd: %w", err))
	}
	if err := unix.Close(w.wakefd); err != nil {
		errs = append(errs, fmt.Errorf("close eventfd: %w", err))
	}
	return errors.Join(errs...)
}

// loop is the one goroutine in epoll_wait; it never blocks elsewhere.
func (w *Watcher) loop() {
	defer close(w.looped)
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// Only a broken epoll fd gets here; new watches then fail and poll.
			w.mu.Lock()
			w.failed = fmt.Errorf("epoll_wait: %w", err)
			w.mu.Unlock()
			return
		}
		at := time.Now()
		w.mu.Lock()
		for _, ev := range events[:n] {
			id := eventID(ev)
			if id == wakeID {
				if w.closed {
					w.mu.Unlock()
					return
				}
				continue
			}
			w.diedLocked(id, at)
		}
		w.mu.Unlock()
	}
}

// diedLocked sends watch id's first Death now, with the exit status if
// the kernel has it, else retries on a timer.
func (w *Watcher) diedLocked(id uint64, at time.Time) {
	wt := w.byID[id]
	if wt == nil || wt.died != nil { // forgotten after epoll_wait returned
		return
	}
	wt.died = &dying{at: at}
	exit, again := readExit(int(wt.fd))
	w.queueLocked(Death{Key: wt.key, PID: int(wt.pid), At: at, Exit: exit})
	if exit.Known || !again {
		w.dropLocked(wt)
		return
	}
	w.retryLocked(wt)
}

// retryLocked arms wt's next exit status read, or drops wt after ExitWait.
func (w *Watcher) retryLocked(wt *watch) {
	d := wt.died
	if d.tries >= len(exitChecks) {
		w.dropLocked(wt)
		return
	}
	wait := max(time.Until(d.at.Add(exitChecks[d.tries])), 0)
	if d.timer == nil {
		d.timer = deadline.Shared().Func(func() { w.recheck(wt) })
	}
	d.timer.Set(wait)
}

// recheck reads a dead watch's exit status again, under mu so that Forget
// cannot close the fd (and its number be reused) in between.
func (w *Watcher) recheck(wt *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.byID[wt.id] != wt {
		return
	}
	wt.died.tries++
	exit, again := readExit(int(wt.fd))
	if exit.Known {
		w.queueLocked(Death{Key: wt.key, PID: int(wt.pid), At: wt.died.at, Exit: exit})
		w.dropLocked(wt)
		return
	}
	if !again {
		w.dropLocked(wt)
		return
	}
	w.retryLocked(wt)
}

// forgetLocked drops key's watch and undelivered deaths, waiting (mu
// released) for the sender to let go of one it offers.
func (w *Watcher) forgetLocked(key string) {
	if wt := w.byKey[key]; wt != nil {
		w.dropLocked(wt)
	}
	kept := w.queue[:0]
	for _, d := range w.queue {
		if d.Key != key {
			kept = append(kept, d)
		}
	}
	clear(w.queue[len(kept):])
	w.queue = kept
	if w.sending != nil && w.sending.Key == key {
		if w.abort != nil { // nil once another Forget closed it
			close(w.abort)
			w.abort = nil
		}
		for w.sending != nil && w.sending.Key == key {
			w.cond.Wait()
		}
	}
}

// dropLocked stops wt's timer and closes its fd (leaving the epoll set).
func (w *Watcher) dropLocked(wt *watch) {
	if wt.died != nil && wt.died.timer != nil {
		wt.died.timer.Stop()
	}
	_ = unix.Close(int(wt.fd))
	delete(w.byID, wt.id)
	if w.byKey[wt.key] == wt {
		delete(w.byKey, wt.key)
	}
}

// queueLocked queues d, or at a full queue drops, counts and announces it.
func (w *Watcher) queueLocked(d Death) {
	if len(w.queue) >= w.queueMax {
		w.overflows.Add(1)
		select {
		case w.resync <- struct{}{}:
		default: // a resync is already pending: it covers this drop too
		}
		return
	}
	w.queue = append(w.queue, d)
	w.cond.Broadcast()
}

// send hands queued deaths to the reader one at a time, abortable by Forget.
func (w *Watcher) send() {
	defer close(w.sent)
	w.mu.Lock()
	for {
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		if w.closed {
			w.mu.Unlock()
			return
		}
		d := w.queue[0]
		w.queue[0] = Death{}
		w.queue = w.queue[1:]
		abort := make(chan struct{})
		w.sending, w.abort = &d, abort
		w.mu.Unlock()
		select {
		case w.out <- d:
		case <-abort:
		case <-w.stop:
		}
		w.mu.Lock()
		w.sending, w.abort = nil, nil
		w.cond.Broadcast()
	}
}

// readExit asks the kernel for fd's exit status; again says whether asking
// later can help (not before 6.13: no PIDFD_GET_INFO). ESRCH is asked
// again: it also answers a read racing the parent's reap.
func readExit(fd int) (exit Exit, again bool) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(fd, &info); err != nil {
		return Exit{}, errors.Is(err, unix.ESRCH)
	}
	if info.Mask&unix.PIDFD_INFO_EXIT == 0 {
		return Exit{}, true
	}
	return decodeExit(info.Exit_code), false
}

// decodeExit reads the kernel's exit_code, a wait status.
func decodeExit(code int32) Exit {
	ws := syscall.WaitStatus(uint32(code))
	switch {
	case ws.Exited():
		return Exit{Known: true, Code: ws.ExitStatus()}
	case ws.Signaled():
		return Exit{Known: true, Signal: ws.Signal()}
	}
	return Exit{}
}

// openError maps pidfd_open's errno to the package's errors.
func openError(pid int, err error) error {
	switch {
	case errors.Is(err, unix.ESRCH):
		return fmt.Errorf("pidfd_open pid %d: %w: %w", pid, ErrGone, err)
	case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE):
		return fmt.Errorf("pidfd_open pid %d: %w: %w", pid, ErrNoFD, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("pidfd_open pid %d: %w: %w", pid, ErrUnsupported, err)
	}
	return fmt.Errorf("pidfd_open pid %d: %w", pid, err)
}

// readable says whether a pidfd already reports its process's exit.
func readable(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// setEventID and eventID keep a 64-bit id in epoll_event's Fd and Pad.
func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd = int32(uint32(id))
	ev.Pad = int32(uint32(id >> 32))
}

func eventID(ev unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// ExitStatusSupported says whether this kernel keeps a reaped process's
// exit status for its pidfd, by trying it on a child.
func ExitStatusSupported() bool {
	var attr syscall.ProcAttr
	pid, err := syscall.ForkExec("/bin/true", []string{"true"}, &attr)
	if err != nil {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	var ws syscall.WaitStatus
	for {
		if _, werr := syscall.Wait4(pid, &ws, 0, nil); werr != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	return unix.IoctlPidfdInfo(fd, &info) == nil && info.Mask&unix.PIDFD_INFO_EXIT != 0
}
