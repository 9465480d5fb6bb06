// Package proctree keeps each watched root process's live descendants and
// reports its exit status at the exit, reaped or not, by the process
// connector or by /proc walks (ADR-0043, ADR-0045). A process is its pid
// and start ticks, so a reused pid is never taken for the recorded one.
package proctree

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Mode is how the Tree learns of forks and exits.
type Mode string

// The two modes, as the metric watchdog_process_tree_mode{mode} names them.
const (
	// ModeEvents follows the process connector's fork and exit events.
	ModeEvents Mode = "events"
	// ModeWalk follows /proc walks at Watch and Refresh only.
	ModeWalk Mode = "walk"
)

// Errors the Tree returns, checked with errors.Is.
var (
	// ErrUnavailable means the process connector cannot be opened here; New then walks.
	ErrUnavailable = errors.New("process connector unavailable")
	// ErrGone means the root is not a live process (gone, or a zombie).
	ErrGone = errors.New("process gone")
	// ErrNotSame means the root's pid now has another start time.
	ErrNotSame = errors.New("pid belongs to another process")
	// ErrNotWatched means the root is not watched.
	ErrNotWatched = errors.New("root not watched")
	// ErrClosed means the Tree was closed.
	ErrClosed = errors.New("process tree closed")
)

// Root is a watched root process: pid and start time name one process.
type Root struct {
	PID int
	// StartTicks is the start time in clock ticks after boot; 0 takes whatever has the pid at Watch.
	StartTicks uint64
}

// Proc is one live descendant of a root, as read when asked.
type Proc struct {
	PID        int
	PPID       int
	StartTicks uint64
	// Comm is the process's name (/proc/<pid>/comm).
	Comm string
}

// Exit is a watched process's end, known whether or not its parent reaps it.
type Exit struct {
	// Root is the watched root whose tree the process belonged to.
	Root Root
	PID  int
	// Code is the exit code when Signal is 0.
	Code int
	// Signal is the signal that killed the process, 0 when it exited.
	Signal syscall.Signal
	// CoreDump is set when the killing signal dumped core.
	CoreDump bool
	// At is when the Tree read the event.
	At time.Time
	// Stamp is the kernel's CLOCK_MONOTONIC at the exit.
	Stamp time.Duration
}

// QueueMax bounds the exits waiting for the reader (ADR-0039).
const QueueMax = 4096

// Options tune a Tree. The zero value is the daemon's.
type Options struct {
	// Walk forces walk mode even where the connector could be opened.
	Walk bool
	// ProcDir is where /proc is mounted; "" is /proc.
	ProcDir string
	// DescendantExits reports the exits of watched descendants too.
	DescendantExits bool

	// unfiltered skips the kernel-side filter: the benchmark's baseline.
	unfiltered bool
}

// Tree keeps the descendants of every watched root; safe for concurrent use.
type Tree struct {
	opt  Options
	conn *conn // nil in walk mode
	why  error // why walk mode: the connector's error, nil when forced or events

	exits     chan Exit
	resync    chan struct{}
	overflows atomic.Uint64 // exits dropped at a full queue
	lost      atomic.Uint64 // times the kernel dropped events (ENOBUFS)
	walking   atomic.Bool   // the connector failed after New: walk mode from then on
	// events counts what the kernel's filter let through (tests, benchmark).
	events atomic.Uint64
	read   chan struct{} // closed when the reader returned

	mu     sync.Mutex
	closed bool
	roots  map[Root]*watched
	// owner is every tree's members by pid (several owners when roots nest).
	owner   map[int][]*watched
	statBuf []byte // the reader's /proc buffer, under mu
	failed  error  // the reader's error, when it stopped on one
	// opened: the filter passes everything during a walk; armed: drained once since.
	opened, armed bool
}

// watched is one root's tree: members' start ticks by pid (0: gone unread).
type watched struct {
	root    Root
	members map[int]uint64
	// exited: the root's exit was seen; its descendants stay until Forget.
	exited bool
}

// New starts a Tree in events mode when the connector can be opened, else
// in walk mode (Why says why).
func New(opt Options) (*Tree, error) {
	if opt.ProcDir == "" {
		opt.ProcDir = "/proc"
	}
	t := &Tree{
		opt:     opt,
		exits:   make(chan Exit, QueueMax),
		resync:  make(chan struct{}, 1),
		read:    make(chan struct{}),
		roots:   make(map[Root]*watched),
		owner:   make(map[int][]*watched),
		statBuf: make([]byte, 0, 1024),
	}
	if opt.Walk {
		close(t.read)
		return t, nil
	}
	c, err := openConn(!opt.unfiltered)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			return nil, fmt.Errorf("process tree: %w", err)
		}
		t.why = err
		close(t.read)
		return t, nil
	}
	t.conn = c
	go t.reader()
	return t, nil
}

// Mode is the mode in force: events, or walk.
func (t *Tree) Mode() Mode {
	if t.conn == nil || t.walking.Load() {
		return ModeWalk
	}
	return ModeEvents
}

// Why is why the Tree walks when not forced to; nil in events mode.
func (t *Tree) Why() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	return t.why
}

// Exits is where watched roots' exits arrive, in kernel order (none in
// walk mode); one forgotten meanwhile may still show up. Never closed.
func (t *Tree) Exits() <-chan Exit { return t.exits }

// Resync receives a value after exits were missed (Overflows, Lost): the
// reader must look at every root it watches. Never closed.
func (t *Tree) Resync() <-chan struct{} { return t.resync }

// Overflows counts the exits dropped at a full queue since New.
func (t *Tree) Overflows() uint64 { return t.overflows.Load() }

// Lost counts the kernel's ENOBUFS reports; each was followed by a walk.
func (t *Tree) Lost() uint64 { return t.lost.Load() }

// Filter is nil when the kernel filters the events (ADR-0045), else why not.
func (t *Tree) Filter() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.conn == nil:
		return errors.New("no process connector")
	case t.conn.filtered():
		return nil
	}
	return t.conn.filterErr
}

// Len is how many roots are watched.
func (t *Tree) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.roots)
}

// Watch starts keeping root's descendants, seeded from the kernel's
// children lists: ErrGone for a root not live, ErrNotSame for a reused
// pid. The seed runs under the lock, so events held meanwhile apply after.
func (t *Tree) Watch(root Root) error {
	if root.PID <= 0 {
		return fmt.Errorf("watch pid %d: not a process id", root.PID)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("watch pid %d: %w", root.PID, ErrClosed)
	}
	if t.roots[root] != nil {
		return nil
	}
	t.openFilter()
	members, err := seed(t.opt.ProcDir, root.PID)
	switch {
	case errors.Is(err, errNoChildrenLists):
		snap, err := walk(t.opt.ProcDir)
		if err != nil {
			return fmt.Errorf("watch pid %d: %w", root.PID, err)
		}
		s, ok := snap.procs[root.PID]
		if !ok {
			return fmt.Errorf("watch pid %d: %w", root.PID, ErrGone)
		}
		members = snap.under(root.PID, map[int]uint64{root.PID: s.startTicks})
	case errors.Is(err, errNoProcess):
		return fmt.Errorf("watch pid %d: %w", root.PID, ErrGone)
	case err != nil:
		return fmt.Errorf("watch pid %d: %w", root.PID, err)
	}
	if start := members[root.PID]; root.StartTicks != 0 && start != root.StartTicks {
		return fmt.Errorf("watch pid %d: %w (started at tick %d, recorded %d)", root.PID, ErrNotSame, start, root.StartTicks)
	}
	w := &watched{root: root, members: members}
	t.roots[root] = w
	for pid := range w.members {
		t.own(pid, w)
	}
	return nil
}

// own adds w to pid's owners; past half the filter's room, filtering ends.
func (t *Tree) own(pid int, w *watched) {
	if len(t.owner[pid]) == 0 && t.conn != nil && t.conn.filtered() {
		if len(t.owner) >= filterMax/2 {
			t.conn.unfilter(fmt.Errorf("%d processes watched, more than the filter takes", len(t.owner)))
		} else {
			t.conn.keep(pid)
		}
	}
	t.owner[pid] = append(t.owner[pid], w)
}

// openFilter lets every event through while a walk runs: a member the walk
// finds may fork before it enters the filter's map.
func (t *Tree) openFilter() {
	if t.conn == nil || !t.conn.filtered() {
		return
	}
	if !t.opened {
		t.conn.open(true)
	}
	t.opened, t.armed = true, false
}

// drained is the reader's word that it read the socket empty. The second
// drain after a walk closes the open flag: the walk's events are applied.
func (t *Tree) drained() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.opened || t.conn == nil || !t.conn.filtered() {
		return
	}
	if !t.armed {
		t.armed = true
		return
	}
	t.conn.open(false)
	t.opened, t.armed = false, false
}

// Forget stops keeping root's descendants; a root not watched is a no-op.
func (t *Tree) Forget(root Root) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.roots[root]
	if w == nil {
		return
	}
	delete(t.roots, root)
	for pid := range w.members {
		t.disown(pid, w)
	}
}

func (t *Tree) disown(pid int, w *watched) {
	ws := slices.DeleteFunc(t.owner[pid], func(x *watched) bool { return x == w })
	if len(ws) == 0 {
		t.unown(pid)
		return
	}
	t.owner[pid] = ws
}

func (t *Tree) unown(pid int) {
	delete(t.owner, pid)
	if t.conn != nil {
		t.conn.drop(pid)
	}
}

// Descendants is root's live descendants (root left out), re-read now.
func (t *Tree) Descendants(root Root) ([]Proc, error) {
	t.mu.Lock()
	w := t.roots[root]
	if w == nil {
		t.mu.Unlock()
		return nil, fmt.Errorf("descendants of pid %d: %w", root.PID, ErrNotWatched)
	}
	type member struct {
		pid   int
		start uint64
	}
	ms := make([]member, 0, len(w.members))
	for pid, start := range w.members {
		if pid != root.PID {
			ms = append(ms, member{pid, start})
		}
	}
	t.mu.Unlock()

	out := make([]Proc, 0, len(ms))
	buf := make([]byte, 0, 1024)
	for _, m := range ms {
		var s stat
		var err error
		s, buf, err = readStat(t.opt.ProcDir, m.pid, buf)
		if err != nil || s.dead() || (m.start != 0 && s.startTicks != m.start) {
			continue
		}
		out = append(out, Proc{PID: m.pid, PPID: s.ppid, StartTicks: s.startTicks, Comm: s.comm})
	}
	slices.SortFunc(out, func(a, b Proc) int { return a.PID - b.PID })
	return out, nil
}

// Refresh walks /proc once and resets every tree from it, keeping orphans
// of live members: walk mode's update, events mode's resync.
func (t *Tree) Refresh() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return fmt.Errorf("refresh: %w", ErrClosed)
	}
	return t.refreshLocked()
}

func (t *Tree) refreshLocked() error {
	t.openFilter()
	snap, err := walk(t.opt.ProcDir)
	if err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	for _, w := range t.roots {
		next := make(map[int]uint64, len(w.members))
		if !w.exited && snap.alive(w.root.PID, w.root.StartTicks) {
			next[w.root.PID] = snap.procs[w.root.PID].startTicks
			snap.under(w.root.PID, next)
		} else {
			w.exited = true
		}
		for pid, start := range w.members {
			if pid == w.root.PID || !snap.alive(pid, start) {
				continue
			}
			if _, ok := next[pid]; !ok {
				next[pid] = snap.procs[pid].startTicks
			}
			snap.under(pid, next)
		}
		for pid := range w.members {
			if _, ok := next[pid]; !ok {
				t.disown(pid, w)
			}
		}
		for pid := range next {
			if _, ok := w.members[pid]; !ok {
				t.own(pid, w)
			}
		}
		w.members = next
	}
	return nil
}

// Close stops the Tree; calls after the first return nil.
func (t *Tree) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	if t.conn != nil {
		t.conn.closeFilter() // under the lock, which every use of the filter holds
	}
	t.mu.Unlock()
	var err error
	if t.conn != nil {
		if cerr := t.conn.close(); cerr != nil {
			err = fmt.Errorf("close the process connector: %w", cerr)
		}
	}
	<-t.read
	return err
}

func (t *Tree) reader() {
	defer close(t.read)
	err := t.conn.read(t.handle, t.lostEvents, t.drained)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	// The connector broke: walks only from now on, and exits may be missed.
	t.failed = err
	t.walking.Store(true)
	t.announce()
}

// handle applies one event; one in no watched tree costs one lookup.
func (t *Tree) handle(ev *event) {
	t.events.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.owner[ev.parent]
	if ev.what == procEventExit {
		ws = t.owner[ev.pid]
	}
	if len(ws) == 0 {
		if !t.opened && t.conn != nil && t.conn.filtered() {
			// In the map but claimed by no tree (parent forgotten since): drop it.
			if len(t.owner[ev.pid]) == 0 {
				t.conn.drop(ev.pid)
			}
			if ev.what == procEventFork {
				t.conn.drop(ev.parent)
			}
		}
		return
	}
	switch ev.what {
	case procEventFork:
		// Pin the child's identity now; a child already gone reads 0.
		var start uint64
		var s stat
		var err error
		if s, t.statBuf, err = readStat(t.opt.ProcDir, ev.pid, t.statBuf); err == nil {
			start = s.startTicks
		}
		for _, w := range ws {
			if _, ok := w.members[ev.pid]; !ok {
				w.members[ev.pid] = start
				t.own(ev.pid, w)
			}
		}
	case procEventExit:
		t.unown(ev.pid)
		code, sig, core := decodeStatus(ev.status)
		at := time.Now()
		for _, w := range ws {
			delete(w.members, ev.pid)
			isRoot := ev.pid == w.root.PID
			if isRoot {
				w.exited = true
			}
			if isRoot || t.opt.DescendantExits {
				t.queue(Exit{Root: w.root, PID: ev.pid, Code: code, Signal: sig, CoreDump: core, At: at, Stamp: time.Duration(ev.stamp)})
			}
		}
	}
}

// lostEvents answers ENOBUFS: every tree is walked again, and a resync told.
func (t *Tree) lostEvents() {
	t.lost.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.refreshLocked() // a /proc that cannot be listed leaves the sets as they were
	t.announce()
}

func (t *Tree) queue(x Exit) {
	select {
	case t.exits <- x:
	default:
		t.overflows.Add(1)
		t.announce()
	}
}

func (t *Tree) announce() {
	select {
	case t.resync <- struct{}{}:
	default: // one pending already covers this
	}
}

// decodeStatus reads a wait status: code, or signal and core dump.
func decodeStatus(ws uint32) (code int, sig syscall.Signal, core bool) {
	if s := ws & 0x7f; s != 0 {
		return 0, syscall.Signal(s), ws&0x80 != 0
	}
	return int(ws>>8) & 0xff, 0, false
}

// Member is a kept process of a watched tree (StartTicks 0: gone unread).
type Member struct {
	PID        int
	StartTicks uint64
}

// Members is root's tree as kept, root included, unread (ADR-0048).
func (t *Tree) Members(root Root) ([]Member, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.roots[root]
	if w == nil {
		return nil, fmt.Errorf("members of pid %d: %w", root.PID, ErrNotWatched)
	}
	out := make([]Member, 0, len(w.members))
	for pid, start := range w.members {
		out = append(out, Member{PID: pid, StartTicks: start})
	}
	return out, nil
}

// MembersOf is root's tree from t when t watches root, else seeded now
// (mode "seed"); a gone or reused root has none.
func MembersOf(t *Tree, root Root) ([]Member, string) {
	if t != nil {
		if ms, err := t.Members(root); err == nil {
			return ms, string(t.Mode())
		}
	}
	s, err := New(Options{Walk: true})
	if err != nil {
		return nil, "seed"
	}
	defer s.Close() //nolint:errcheck // a walk-mode tree holds nothing to close
	if s.Watch(root) != nil {
		return nil, "seed"
	}
	ms, _ := s.Members(root)
	return ms, "seed"
}
