package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// ProcessOwner is who a process runs as, and its parent: what the reaper
// must know before it signals anything (reaper.kill_users).
type ProcessOwner struct {
	// RealUID and EffectiveUID must both be allowed: a setuid program running as root is root's.
	RealUID, EffectiveUID int
	// PPID is the parent process id (0 for the kernel's own roots).
	PPID int
}

// Owner reads pid's owner and parent from <ProcRoot>/<pid>/status. It is
// not on the sweep's path: only a signal about to be sent asks for it.
func (h *Host) Owner(pid int) (ProcessOwner, error) {
	path := h.procRoot() + "/" + strconv.Itoa(pid) + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return ProcessOwner{}, fmt.Errorf("read %s: %w", path, err)
	}
	return parseStatusOwner(b)
}

// parseStatusOwner picks the Uid and PPid lines out of a /proc status file.
func parseStatusOwner(b []byte) (ProcessOwner, error) {
	var o ProcessOwner
	var haveUID, havePPID bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(val)
		switch string(key) {
		case "PPid":
			if len(f) < 1 {
				return o, fmt.Errorf("status: malformed PPid line")
			}
			n, err := strconv.Atoi(string(f[0]))
			if err != nil {
				return o, fmt.Errorf("status: PPid %q: %w", f[0], err)
			}
			o.PPID, havePPID = n, true
		case "Uid":
			if len(f) < 2 {
				return o, fmt.Errorf("status: malformed Uid line")
			}
			r, err1 := strconv.Atoi(string(f[0]))
			e, err2 := strconv.Atoi(string(f[1]))
			if err1 != nil || err2 != nil {
				return o, fmt.Errorf("status: malformed Uid line %q", val)
			}
			o.RealUID, o.EffectiveUID, haveUID = r, e, true
		}
	}
	if !haveUID || !havePPID {
		return o, fmt.Errorf("status: no Uid or PPid line")
	}
	return o, nil
}

// Ancestors lists the process ids from pid's parent up to the first
// process (pid 1 included), stopping at a loop or an unreadable status.
func (h *Host) Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for range 4096 {
		o, err := h.Owner(pid)
		if err != nil || o.PPID <= 0 || seen[o.PPID] {
			return out
		}
		out = append(out, o.PPID)
		seen[o.PPID] = true
		pid = o.PPID
	}
	return out
}
