// Package proctree keeps, for each watched root process, the set of its
// live descendants, and reports a watched root's exit with its status the
// moment the kernel says it, reaped or not.
//
// Two modes give the same API (ADR-0043). In "events" mode (Linux, with
// CAP_NET_ADMIN in the initial namespaces) the Tree subscribes once to
// the kernel's process connector and keeps each set by fork and exit
// events after seeding it with one /proc walk; an eBPF filter in the
// kernel (ADR-0045) drops the events of processes in no watched tree
// before they reach the socket, and where it cannot be loaded such an
// event costs a read and one map lookup. In "walk" mode (no privilege,
// another OS, or forced) the sets are what /proc walks (by ppid chains)
// find at Watch and at each Refresh, and no exit is reported: the caller's
// pidfds remain its only source of exit status.
//
// A process is known by its pid and its start time in clock ticks after
// boot (/proc/<pid>/stat field 22), so that a pid reused later is never
// taken for the one recorded.
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

// The two modes, as the metric watchdog_process_tree_mode{mode} names
// them.
const (
	// ModeEvents: the process connector's fork and exit events.
	ModeEvents Mode = "events"
	// ModeWalk: /proc walks at Watch and Refresh only.
	ModeWalk Mode = "walk"
)

// Errors the Tree returns, checked with errors.Is.
var (
	// ErrUnavailable: the process connector cannot be opened here (no
	// privilege, a non-initial namespace, another OS); New then gives a
	// Tree in walk mode and says why (Why).
	ErrUnavailable = errors.New("process connector unavailable")
	// ErrGone: the root is not a live process (gone, or a zombie).
	ErrGone = errors.New("process gone")
	// ErrNotSame: the root's pid belongs to another process (its start
	// time differs from the one recorded).
	ErrNotSame = errors.New("pid belongs to another process")
	// ErrNotWatched: the root is not watched (never, or forgotten).
	ErrNotWatched = errors.New("root not watched")
	// ErrClosed: the Tree was closed.
	ErrClosed = errors.New("process tree closed")
)

// Root is a watched root process: its pid and its start time, which
// together name one process for as long as the host runs.
type Root struct {
	PID int
	// StartTicks is the start time in clock ticks after boot; 0 takes
	// whatever process has the pid at Watch.
	StartTicks uint64
}

// Proc is one live descendant of a root, as read when asked.
type Proc struct {
	PID        int
	PPID       int
	StartTicks uint64
	// Comm is the process's name (/proc/<pid>/comm's 15 bytes).
	Comm string
}

// Exit is a watched process's end, from the connector's exit event:
// the status the process left for its parent, known at once whether or
// not the parent ever reaps it.
type Exit struct {
	// Root is the watched root whose tree the process belonged to; the
	// process is the root itself when PID == Root.PID.
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
	// Stamp is the kernel's CLOCK_MONOTONIC at the exit: the delay from
	// the exit to its delivery is CLOCK_MONOTONIC at receipt minus Stamp.
	Stamp time.Duration
}

// QueueMax bounds the exits waiting for the reader, as pidwatch.QueueMax
// bounds its deaths (ADR-0039): an exit finding the queue full is dropped,
// counted (Overflows) and announced on Resync.
const QueueMax = 4096

// Options tune a Tree. The zero value is the daemon's.
type Options struct {
	// Walk forces walk mode even where the connector could be opened
	// (tests of the reduced mode; an operator's choice).
	Walk bool
	// ProcDir is where /proc is mounted; "" is /proc.
	ProcDir string
	// DescendantExits reports the exits of watched descendants too, not
	// only of roots.
	DescendantExits bool

	// unfiltered reads every process's events, as before the kernel-side
	// filter (ADR-0045): the benchmark's baseline.
	unfiltered bool
}

// Tree keeps the descendants of every watched root. Its methods may be
// called from any goroutine.
type Tree struct {
	opt  Options
	conn *conn // nil in walk mode
	why  error // why walk mode: the connector's error, nil when forced or events

	exits     chan Exit
	resync    chan struct{}
	overflows atomic.Uint64 // exits dropped at a full queue
	lost      atomic.Uint64 // times the kernel dropped events (ENOBUFS)
	walking   atomic.Bool   // the connector failed after New: walk mode from then on
	// events counts what the reader handled: what the kernel's filter let
	// through, for its tests and the benchmark.
	events atomic.Uint64
	read   chan struct{} // closed when the reader returned

	mu     sync.Mutex
	closed bool
	roots  map[Root]*watched
	// owner is every member of every watched tree (roots included), by
	// pid: the one lookup an event costs. A pid is in more than one tree
	// only when watched roots nest.
	owner   map[int][]*watched
	statBuf []byte // the reader's /proc buffer, under mu
	failed  error  // the reader's error, when it stopped on one
	// opened: the filter's open flag is set (a walk ran: Watch, Refresh),
	// so every process's events come through; armed: the reader has
	// drained the socket once since, and takes the flag off at its next
	// drain, once everything queued during the walk has been applied.
	opened, armed bool
}

// watched is one root's tree: its members by pid, with their start ticks
// (0 when the process was gone before it could be read).
type watched struct {
	root    Root
	members map[int]uint64
	// exited: the root's exit was seen (event, or found gone by a walk);
	// its descendants are kept, as leftovers, until Forget.
	exited bool
}

// New starts a Tree: in events mode when the process connector can be
// opened, otherwise in walk mode (Why says why). Only a failure that is
// not about availability (the socket's own calls) is an error.
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

// Mode is the mode in force: events, or walk (forced, the connector
// unavailable, or failed since).
func (t *Tree) Mode() Mode {
	if t.conn == nil || t.walking.Load() {
		return ModeWalk
	}
	return ModeEvents
}

// Why is why the Tree walks when it was not forced to: the connector's
// error at New, or the reader's since; nil in events mode.
func (t *Tree) Why() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return t.failed
	}
	return t.why
}

// Exits is where watched roots' exits arrive (and descendants' with
// Options.DescendantExits), in the order the kernel reported them. Nothing
// arrives in walk mode. A root forgotten after its exit was queued may
// still show up: the reader checks it against its own table. Never closed.
func (t *Tree) Exits() <-chan Exit { return t.exits }

// Resync receives a value after exits were missed: dropped at the full
// queue (Overflows), or lost by the kernel before the Tree read them
// (Lost; the sets were walked again then). The reader must look at every
// root it watches. One value stands for every miss since the last was
// taken. Never closed.
func (t *Tree) Resync() <-chan struct{} { return t.resync }

// Overflows counts the exits dropped at a full queue since New.
func (t *Tree) Overflows() uint64 { return t.overflows.Load() }

// Lost counts the times the kernel dropped events because the Tree's
// socket buffer was full; each was followed by a walk of every tree.
func (t *Tree) Lost() uint64 { return t.lost.Load() }

// Filter is nil when the kernel filters the connector's events down to
// the watched processes' (ADR-0045), else why it does not: walk mode, no
// eBPF here, or the filter given up since (too many members).
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

// Watch starts keeping root's descendants, seeded by the kernel's
// children lists from the root down (one read per member: the cost of the
// root's own tree, not of the host's every process; a kernel without the
// lists gets one /proc walk by ppid chains instead). It is
// ErrGone when root is not a live process and ErrNotSame when its pid has
// another start time. Watching a root already watched does nothing.
//
// In events mode the seed runs under the Tree's lock, so the events the
// reader holds meanwhile apply after it: a fork during the seed is either
// seen by it or added by its event, an exit removes what the seed saw.
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
		// No children lists in this kernel: the ppid chains of one walk.
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

// own adds w to pid's owners; a pid new to every tree enters the
// kernel's filter. Members past half the filter's room end the filtering.
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

// openFilter lets every process's events through the kernel's filter
// while a walk runs (and until the reader has applied what came during
// it, drained): a member the walk finds may fork before it enters the
// filter's map, and that fork, with its child's, must still arrive.
func (t *Tree) openFilter() {
	if t.conn == nil || !t.conn.filtered() {
		return
	}
	if !t.opened {
		t.conn.open(true)
	}
	t.opened, t.armed = true, false
}

// drained is the reader's word that it read the socket empty. The first
// drain after a walk arms the closing of the filter's open flag, the next
// closes it: the read between the two began after the walk ended, so
// every event queued during the walk has been applied, and every member
// found since is in the filter's map (a later fork of one adds its child
// there in the kernel).
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

// Forget stops keeping root's descendants. Forgetting a root not watched
// does nothing.
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

// disown takes w out of pid's owners.
func (t *Tree) disown(pid int, w *watched) {
	ws := slices.DeleteFunc(t.owner[pid], func(x *watched) bool { return x == w })
	if len(ws) == 0 {
		t.unown(pid)
		return
	}
	t.owner[pid] = ws
}

// unown takes pid out of every tree, and out of the kernel's filter.
func (t *Tree) unown(pid int) {
	delete(t.owner, pid)
	if t.conn != nil {
		t.conn.drop(pid)
	}
}

// Descendants is root's live descendants (the root itself left out), each
// read from /proc now, by pid: a member gone, a zombie, or with another
// start time than the one recorded is left out. In events mode the set
// is current; in walk mode it is the last walk's (Watch, Refresh), less
// what has ended since.
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

// Refresh walks /proc once and sets every watched tree from it: what the
// ppid chains show under the root, and under each member still alive with
// its recorded start time (so a descendant orphaned since the last walk,
// now a child of init, is kept, with its own descendants). A root found
// gone is marked exited. In walk mode this is how the sets follow the
// processes (the daemon calls it at its sweep and at each death); in
// events mode it is the resync after lost events.
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

// Close stops the Tree: the connector is closed and nothing more arrives.
// Calls after the first return nil.
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

// reader is the one goroutine reading the connector.
func (t *Tree) reader() {
	defer close(t.read)
	err := t.conn.read(t.handle, t.lostEvents, t.drained)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	// The connector broke under us: from now on the sets follow walks
	// only, and exits may have been missed.
	t.failed = err
	t.walking.Store(true)
	t.announce()
}

// handle applies one event. An event for a process in no watched tree
// (nearly all of them, in a fork storm) costs the lock and one lookup.
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
			// Through the filter for no tree: its pid is in the map
			// though no tree claims it (added by the kernel under a
			// parent forgotten since). Out, so that it costs no more.
			// (A fork's child can be owned already: a root watched
			// since its fork event was queued.)
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
		// The child's start time pins its identity now; a child already
		// gone reads 0 and its exit event follows.
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

// lostEvents answers ENOBUFS: the kernel dropped events, which cannot be
// known, so every tree is walked again and the reader told to resync.
func (t *Tree) lostEvents() {
	t.lost.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.refreshLocked() // a /proc that cannot be listed leaves the sets as they were
	t.announce()
}

// queue hands x to the reader, or drops and counts it at a full queue.
func (t *Tree) queue(x Exit) {
	select {
	case t.exits <- x:
	default:
		t.overflows.Add(1)
		t.announce()
	}
}

// announce leaves one resync token for the reader.
func (t *Tree) announce() {
	select {
	case t.resync <- struct{}{}:
	default: // one pending already covers this
	}
}

// decodeStatus reads a wait status (the kernel's exit_code): the code in
// bits 8-15, or the killing signal in bits 0-6 with bit 7 for a core dump.
func decodeStatus(ws uint32) (code int, sig syscall.Signal, core bool) {
	if s := ws & 0x7f; s != 0 {
		return 0, syscall.Signal(s), ws&0x80 != 0
	}
	return int(ws>>8) & 0xff, 0, false
}

// Member is a process of a watched tree as the Tree keeps it, unread: its
// pid and its start ticks (0 when it was gone before it could be read).
type Member struct {
	PID        int
	StartTicks uint64
}

// Members is root's tree as kept (the root itself included), without
// reading any of it: for a reader that reads each member once itself (the
// process facts, ADR-0048) where Descendants would read it twice. Members
// may have ended since; the caller checks each by its start ticks.
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

// MembersOf is root's tree from t when t watches root (its mode says how
// it was kept), else read now from the root down as Watch seeds it
// (mode "seed"): a CLI's read, or a root the daemon does not keep. A nil
// t always seeds. A root gone or not the recorded process has no members.
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
