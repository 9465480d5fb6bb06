package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// stat is what the tree needs of one /proc/<pid>/stat.
type stat struct {
	pid        int
	ppid       int
	state      byte
	startTicks uint64
	comm       string
}

// dead says whether the process has exited (zombie or dying), reaped or not.
func (s stat) dead() bool { return s.state == 'Z' || s.state == 'X' || s.state == 'x' }

// errNoProcess: /proc has no such pid.
var errNoProcess = errors.New("no such process")

// readStat reads /proc/<pid>/stat under dir; a gone process gives
// errNoProcess, wrapped.
func readStat(dir string, pid int, buf []byte) (stat, []byte, error) {
	f, err := os.Open(filepath.Join(dir, strconv.Itoa(pid), "stat"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return stat{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, errNoProcess)
		}
		return stat{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	defer f.Close()
	n, err := f.Read(buf[:cap(buf)])
	if err != nil {
		// ESRCH: the process went between the open and the read.
		return stat{}, buf, fmt.Errorf("read stat of pid %d: %w: %w", pid, errNoProcess, err)
	}
	s, err := parseStat(buf[:n])
	if err != nil {
		return stat{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	return s, buf, nil
}

// parseStat parses one /proc/<pid>/stat line. The name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 1 || end < open {
		return stat{}, fmt.Errorf("unparsable stat %q", b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return stat{}, fmt.Errorf("unparsable pid in stat: %w", err)
	}
	s := stat{pid: pid, comm: string(b[open+1 : end])}
	// After ") ": field 3 is the state, 4 the ppid, 22 the start time.
	rest := b[end+1:]
	field := 2
	for len(rest) > 0 && field < 22 {
		rest = bytes.TrimLeft(rest, " ")
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			i = len(rest)
		}
		word := rest[:i]
		rest = rest[i:]
		field++
		switch field {
		case 3:
			if len(word) > 0 {
				s.state = word[0]
			}
		case 4:
			if s.ppid, err = strconv.Atoi(string(word)); err != nil {
				return stat{}, fmt.Errorf("unparsable ppid in stat: %w", err)
			}
		case 22:
			if s.startTicks, err = strconv.ParseUint(string(bytes.TrimSpace(word)), 10, 64); err != nil {
				return stat{}, fmt.Errorf("unparsable start time in stat: %w", err)
			}
		}
	}
	if field < 22 {
		return stat{}, fmt.Errorf("short stat %q", b)
	}
	return s, nil
}

// snapshot is one walk of /proc: every live process by pid, and the
// children of each.
type snapshot struct {
	procs    map[int]stat
	children map[int][]int
}

// walk reads every process under dir; only a /proc that cannot be listed
// fails.
func walk(dir string) (snapshot, error) {
	d, err := os.Open(dir)
	if err != nil {
		return snapshot{}, fmt.Errorf("walk %s: %w", dir, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return snapshot{}, fmt.Errorf("walk %s: %w", dir, err)
	}
	snap := snapshot{procs: make(map[int]stat, len(names)), children: make(map[int][]int, len(names))}
	buf := make([]byte, 0, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		var s stat
		s, buf, err = readStat(dir, pid, buf)
		if err != nil || s.dead() {
			continue
		}
		snap.procs[pid] = s
		snap.children[s.ppid] = append(snap.children[s.ppid], pid)
	}
	return snap, nil
}

// under adds every live descendant of pid, by ppid chains, to into.
func (snap snapshot) under(pid int, into map[int]uint64) map[int]uint64 {
	stack := append([]int(nil), snap.children[pid]...)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, seen := into[p]; seen {
			continue
		}
		into[p] = snap.procs[p].startTicks
		stack = append(stack, snap.children[p]...)
	}
	return into
}

// alive says whether the snapshot holds pid with start (0: any).
func (snap snapshot) alive(pid int, start uint64) bool {
	s, ok := snap.procs[pid]
	return ok && (start == 0 || s.startTicks == start)
}

// errNoChildrenLists: no /proc/<pid>/task/<tid>/children (no
// CONFIG_PROC_CHILDREN); the seed walks instead.
var errNoChildrenLists = errors.New("no children lists in /proc")

// seed reads root's live descendants (root included) by the kernel's
// children lists: one read per member, not per process on the host.
// errNoProcess for a gone root, errNoChildrenLists without the lists.
func seed(dir string, root int) (map[int]uint64, error) {
	buf := make([]byte, 0, 1024)
	s, buf, err := readStat(dir, root, buf)
	if err != nil {
		return nil, err
	}
	if s.dead() {
		return nil, fmt.Errorf("read stat of pid %d: %w (zombie)", root, errNoProcess)
	}
	members := map[int]uint64{root: s.startTicks}
	stack := []int{root}
	for len(stack) > 0 {
		pid := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kids, err := children(dir, pid)
		if err != nil {
			if pid == root && errors.Is(err, errNoChildrenLists) {
				return nil, err
			}
			continue // the member went meanwhile: its children, if any, are reparented
		}
		for _, k := range kids {
			if _, seen := members[k]; seen {
				continue
			}
			var ks stat
			if ks, buf, err = readStat(dir, k, buf); err != nil || ks.dead() {
				continue
			}
			members[k] = ks.startTicks
			stack = append(stack, k)
		}
	}
	return members, nil
}

// children lists pid's children from each of its threads' children lists.
func children(dir string, pid int) ([]int, error) {
	taskDir := filepath.Join(dir, strconv.Itoa(pid), "task")
	d, err := os.Open(taskDir)
	if err != nil {
		return nil, fmt.Errorf("children of pid %d: %w", pid, errNoProcess)
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("children of pid %d: %w", pid, err)
	}
	var out []int
	read := false
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(taskDir, tid, "children"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && tid == strconv.Itoa(pid) {
				if _, serr := os.Stat(filepath.Join(taskDir, tid)); serr == nil {
					return nil, fmt.Errorf("children of pid %d: %w", pid, errNoChildrenLists)
				}
			}
			continue // the thread exited meanwhile
		}
		read = true
		for f := range bytes.FieldsSeq(b) {
			if c, err := strconv.Atoi(string(f)); err == nil && c > 0 {
				out = append(out, c)
			}
		}
	}
	if !read {
		return nil, fmt.Errorf("children of pid %d: %w", pid, errNoProcess)
	}
	return out, nil
}
