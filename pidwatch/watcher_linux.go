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

// Watcher holds one pidfd per watched key in one epoll set, and one
// goroutine blocked in epoll_wait on it: no timeout and no polling, so an
// idle Watcher costs no CPU however many processes it holds. Close wakes
// that goroutine through an eventfd in the same set.
//
// Deaths reach the reader through an internal queue and one sender
// goroutine, so the epoll goroutine never waits for the reader, however
// slow. The queue is bounded (QueueMax): a death that finds it full is
// dropped, counted (Overflows) and announced on Resync, after which the
// reader must look at every process it watches, since it cannot know
// which deaths it missed. The channel itself is unbuffered: a death not
// yet handed over stays in the queue, where Forget can still withdraw it.
//
// Blind spots: a death is a pidfd turning readable, which the kernel
// signals when the whole thread group has exited (a zombie counts); the
// exit status is only known once the parent reaped the process, which a
// parent that never waits (or an init that reaps late) delays past
// ExitWait, and then Exit stays unknown.
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

	// queueMax bounds queue: QueueMax, lowered only by the package's own
	// tests (export_test.go) to overflow it with a handful of processes.
	queueMax int
	// resync holds one token while a drop is unannounced to the reader:
	// buffered 1, so any number of drops before the reader takes it are
	// one resync.
	resync    chan struct{}
	overflows atomic.Uint64 // deaths dropped at a full queue, ever
}

// watch is one key's pidfd. Its id, not the fd number, is the epoll
// event's data: a forgotten fd's number can be handed out again at once,
// and an event already returned for the old one must not land on the new.
//
// A live process's watch is 48 bytes, a size class, where it was 96: pid
// and fd are 32 bits (a Linux pid and a descriptor number are), and what
// only a death needs is behind one pointer, nil until then (ADR-0052).
type watch struct {
	key string
	pid int32
	fd  int32
	id  uint64
	// died is set when the pidfd turned readable; the exit status may
	// follow.
	died *dying
}

// dying is what a watch keeps from its process's death until its exit
// status is read or ExitWait has passed.
type dying struct {
	at    time.Time // when the pidfd turned readable
	tries int       // exit status reads after the first
	timer *deadline.Alarm
}

// wakeID is the eventfd's epoll data; watches count from 1.
const wakeID = 0

// exitChecks are when, counted from the death, the exit status is read
// again while the kernel does not have it yet: often at once for a parent
// that reaps promptly, seldom later; the last is ExitWait.
var exitChecks = []time.Duration{
	5 * time.Millisecond,
	25 * time.Millisecond,
	125 * time.Millisecond,
	625 * time.Millisecond,
	1250 * time.Millisecond,
	ExitWait,
}

// New starts a Watcher. It returns ErrUnsupported when this kernel has no
// pidfd_open (older than 5.3, or a seccomp filter refusing it), which New
// learns by opening a pidfd of its own process.
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
// the one the caller recorded, and watches it under key; a key already
// watched is forgotten first (its undelivered deaths too). same runs after
// the fd is open, so once it says yes the fd is known to be that very
// process, whatever happens to the pid later; it must not call back into
// the Watcher.
//
// Errors, checked with errors.Is: ErrGone when no process has the pid, or
// the one behind the fd has died and same says it was another (either way
// the recorded process is gone); ErrNotSame when a live process has the pid
// and same says it is another; ErrNoFD when the process or system is out of
// file descriptors or epoll watches (EMFILE, ENFILE, ENOSPC, ENOMEM: poll
// this one instead), and ErrBudget (which wraps ErrNoFD) when the Watcher
// holds its cap of pidfds (SetMax); ErrClosed after Close. Nothing is watched and no fd is
// left open after an error. A process that has already exited but not been
// reaped (a zombie) is watched, and its Death follows at once.
func (w *Watcher) Watch(key string, pid int, same func() bool) error {
	if pid <= 0 {
		return fmt.Errorf("watch pid %d: not a process id", pid)
	}
	if same == nil {
		return fmt.Errorf("watch pid %d: no identity check given", pid)
	}
	// A slot under the cap is taken before the pidfd is opened, so that
	// concurrent Watch calls can never hold more than the cap between
	// them, even for a moment.
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
	// forgetLocked may wait for the sender, letting go of mu, and another
	// Watch of the same key may land meanwhile: forget until none is left,
	// so no watch is ever orphaned with its fd.
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
	// One-shot: a dead pidfd stays readable while it is kept for the exit
	// status, and must not wake the loop again.
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

// SetMax caps the pidfds the Watcher holds at once at n (0: no cap, the
// default): a Watch beyond it returns ErrBudget without opening anything.
// Dead processes whose exit status is still awaited count, as they hold
// their fd (at most ExitWait). Lowering the cap below what is held closes
// nothing; new watches wait until deaths bring the count under it.
func (w *Watcher) SetMax(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max = max(n, 0)
}

// takeSlot reserves one pidfd under the cap for a Watch of key, or
// returns ErrBudget (ErrClosed after Close). A key already watched gives
// its slot to its new watch, which forgets it first.
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

// Forget stops watching key and closes its fd. No Death for key reaches
// the reader after Forget returns: those still queued are dropped, and one
// the sender is offering is taken back. (A Death the reader took before
// Forget returned is the reader's; a reader on another goroutine than the
// one calling Forget can see one such, and should check the key against
// its own table.) Forgetting a key not watched does nothing.
func (w *Watcher) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.forgetLocked(key)
}

// Deaths is where deaths arrive, in the order they were seen. It is never
// closed: after Close nothing more arrives, and undelivered deaths are
// dropped.
func (w *Watcher) Deaths() <-chan Death { return w.out }

// Resync receives a value after a death was dropped at a full queue
// (QueueMax): the reader has missed deaths and must look at every process
// it watches (a check of each finds the dead ones, whose pidfds had
// turned readable before the drop). One value stands for every drop since
// the last was taken; a drop after it is taken sends another. Like
// Deaths it is never closed.
func (w *Watcher) Resync() <-chan struct{} { return w.resync }

// Overflows counts the deaths dropped at a full queue since New (the
// counter watchdog_pidwatch_overflow_total). A dropped first Death is
// found again by the resync; a dropped second one (the exit status that
// came late) is lost, and the entity's exit status reads unknown.
func (w *Watcher) Overflows() uint64 { return w.overflows.Load() }

// Max is the cap SetMax set (0: none).
func (w *Watcher) Max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// Len is how many keys hold a pidfd now: the live processes watched, and
// the dead ones whose exit status is still awaited (at most ExitWait).
func (w *Watcher) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byKey)
}

// Close stops the Watcher and closes every fd it holds. Calls after the
// first return nil; Watch after Close returns ErrClosed.
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

// loop is the one goroutine in epoll_wait. It never blocks on anything
// else: a death is queued for the sender, and the exit status is read once
// here and retried on timers.
func (w *Watcher) loop() {
	defer close(w.looped)
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// Only a broken epoll fd gets here; new watches then fail and
			// their callers poll.
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

// diedLocked records that watch id's pidfd turned readable at at: its
// first Death goes out now, with the exit status if the kernel already has
// it, and otherwise the status is looked for again on a timer.
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

// retryLocked arms wt's next exit status read, or drops wt when ExitWait
// has passed.
func (w *Watcher) retryLocked(wt *watch) {
	d := wt.died
	if d.tries >= len(exitChecks) {
		w.dropLocked(wt)
		return
	}
	wait := max(time.Until(d.at.Add(exitChecks[d.tries])), 0)
	// An alarm on the process's one timer (ADR-0055), made once per
	// watch and set again for each try.
	if d.timer == nil {
		d.timer = deadline.Shared().Func(func() { w.recheck(wt) })
	}
	d.timer.Set(wait)
}

// recheck reads a dead watch's exit status again, off the epoll goroutine.
// The read happens under mu so that Forget cannot close the fd (and the
// number be reused) in between.
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

// forgetLocked drops key's watch and withdraws its deaths not yet handed
// over. When the sender is offering one, it waits (releasing mu) until the
// sender has let go of it, delivered or dropped.
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

// dropLocked ends wt: its timer stopped, its fd closed (which also takes
// it out of the epoll set, as no other fd refers to it).
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

// queueLocked queues d for the sender or, when the queue is full, drops
// it, counts it and announces a resync. The watch behind d goes on as if
// d had been delivered (dropped once its last Death is out), so the drop
// frees its fd all the same.
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

// send hands queued deaths to the reader one at a time, so that nothing
// the epoll goroutine does waits for the reader, and a death not yet taken
// can be withdrawn (abort) by Forget.
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

// readExit asks the kernel for fd's exit status. again says whether asking
// later can help: not when the kernel refuses the ioctl (older than 6.13:
// no PIDFD_GET_INFO).
//
// ESRCH is asked again. A kernel with PIDFD_INFO_EXIT answers it while
// the parent is reaping the process at that very moment (it read no exit
// status yet, then found the pid already detached); the status is there
// at the next read. Taking that answer as final dropped the watch with
// only the unknown Death sent, and the known one never came (TestOrphanExit
// lost one death in about 15 runs). On 6.13 and 6.14, which answer ESRCH
// for every reaped process, the retries cost the fd until ExitWait, as a
// process its parent does not reap already does.
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

// decodeExit reads the kernel's exit_code, which is a wait status: the
// code in bits 8-15, or the killing signal in bits 0-6 (bit 7 for a core
// dump).
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

// openError maps pidfd_open's errno to the package's errors, keeping the
// errno in the chain.
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

// setEventID and eventID keep a 64-bit id in epoll_event's data, which
// x/sys/unix splits into Fd and Pad.
func setEventID(ev *unix.EpollEvent, id uint64) {
	ev.Fd = int32(uint32(id))
	ev.Pad = int32(uint32(id >> 32))
}

func eventID(ev unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// ExitStatusSupported says whether this kernel keeps a reaped process's
// exit status for its pidfd (PIDFD_INFO_EXIT, Linux ≥ 6.15): a child is
// started, opened, reaped and asked. Without it every Death's Exit is
// unknown, and the evidence says "exit status not available".
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
