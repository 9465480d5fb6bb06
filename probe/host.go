package probe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Default locations of the host facts a probe compares against.
const (
	DefaultProcRoot      = "/proc"
	DefaultMachineIDPath = "/etc/machine-id"
)

// Host is this machine as the probe sees it. Host and boot ids and the boot
// time are read once, keeping every start time on the same base; set the
// fields before the first call, after which a Host is safe for concurrent use.
type Host struct {
	// ProcRoot is the procfs mount; "" means DefaultProcRoot.
	ProcRoot string
	// MachineIDPath holds the host id; "" means DefaultMachineIDPath. When it
	// is missing or empty the host id is the hostname.
	MachineIDPath string
	// BootIDSource returns the current boot id; nil reads
	// <ProcRoot>/sys/kernel/random/boot_id.
	BootIDSource func() (string, error)
	// HostIDOverride, when set, is the host id (config `host_id`): for hosts
	// whose machine-id is cloned or shared.
	HostIDOverride string

	initOnce sync.Once
	reader   processReader

	hostOnce sync.Once
	hostID   string

	mu     sync.Mutex // guards the two caches below; errors are not cached
	bootID string
	btime  int64 // seconds since the epoch; 0 = not read yet
}

// NewHost returns the Host of this machine with real defaults.
func NewHost() *Host {
	return &Host{ProcRoot: DefaultProcRoot, MachineIDPath: DefaultMachineIDPath}
}

func (h *Host) procRoot() string {
	if h.ProcRoot == "" {
		return DefaultProcRoot
	}
	return h.ProcRoot
}

// processes returns the process reader, choosing it on first use (see
// processReader for why there are two).
func (h *Host) processes() processReader {
	h.initOnce.Do(func() { h.reader = newProcessReader(h.procRoot()) })
	return h.reader
}

// HostID is the id of this machine: /etc/machine-id (trimmed), else the
// hostname, else "" when neither can be read.
func (h *Host) HostID() string {
	h.hostOnce.Do(func() {
		if h.HostIDOverride != "" {
			h.hostID = h.HostIDOverride
			return
		}
		p := h.MachineIDPath
		if p == "" {
			p = DefaultMachineIDPath
		}
		if b, err := os.ReadFile(p); err == nil {
			h.hostID = strings.TrimSpace(string(b))
		}
		if h.hostID == "" {
			h.hostID, _ = os.Hostname()
		}
	})
	return h.hostID
}

// BootID is the id of the current boot. On an error, callers cannot tell a
// reboot apart and must not conclude one.
func (h *Host) BootID() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.bootID != "" {
		return h.bootID, nil
	}
	var (
		id  string
		err error
	)
	if h.BootIDSource != nil {
		id, err = h.BootIDSource()
	} else {
		var b []byte
		b, err = os.ReadFile(h.procRoot() + "/sys/kernel/random/boot_id")
		id = string(b)
	}
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", errors.New("read boot id: empty")
	}
	h.bootID = id
	return id, nil
}

// bootTime moves when the clock is stepped: why wall-clock start times
// compare with a tolerance.
func (h *Host) bootTime() (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.btime != 0 {
		return h.btime, nil
	}
	p := h.procRoot() + "/stat"
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("read boot time: %w", err)
	}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("btime "))
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil || v <= 0 {
			return 0, fmt.Errorf("read boot time: %s: bad btime line %q", p, line)
		}
		h.btime = v
		return v, nil
	}
	return 0, fmt.Errorf("read boot time: %s has no btime line", p)
}
