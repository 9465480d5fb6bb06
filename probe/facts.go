package probe

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// TreeMember is one process of a root's tree: its pid and start ticks (0: not recorded).
type TreeMember struct {
	PID        int
	StartTicks uint64
}

// Bounds of the reader's memory of earlier reads, for the recent CPU % (ADR-0048).
const (
	minCPUWindow = time.Second
	sampleMaxAge = 10 * time.Minute
	maxSamples   = 4096
)

// Facts reads an entity's process facts when it is read, never on a timer
// (ADR-0048). Safe for concurrent use.
type Facts struct {
	host *Host

	mu      sync.Mutex
	samples map[TreeMember]*treeSamples // by root
}

// treeSamples are a tree's last two reads: the base of the next read's
// CPU % is the newer one when it is old enough, else the older.
type treeSamples struct {
	prev, last cpuSample
}

// cpuSample is a tree's CPU ticks by member at one read.
type cpuSample struct {
	at  time.Time
	cpu map[TreeMember]uint64
}

// NewFacts returns a reader of h's processes with no memory yet.
func NewFacts(h *Host) *Facts {
	return &Facts{host: h, samples: map[TreeMember]*treeSamples{}}
}

// usage is what one /proc/<pid>/stat gives the facts.
type usage struct {
	state      byte
	cpuTicks   uint64 // utime + stime
	threads    int
	startTicks uint64
	rssPages   uint64
}

// Read reads the facts of root and its tree members. A root not alive with
// its recorded identity gives only Unavailable: a reused pid is never described.
func (f *Facts) Read(root PIDSubject, members []TreeMember, mode string, now time.Time) state.ProcessFacts {
	out := state.ProcessFacts{PID: root.PID, ReadAt: unixtime.Of(now)}
	o := f.host.CheckPID(root)
	if !o.IdentityVerified() {
		out.Unavailable = o.Cause.String()
		if o.Liveness == Alive && o.Cause == CauseNone {
			out.Unavailable = "identity not verified"
		}
		return out
	}
	buf := make([]byte, 0, 1024)
	ru, buf, err := f.readUsage(root.PID, buf)
	if err != nil || ru.state == 'Z' || ru.state == 'X' || ru.startTicks != o.StartTicks {
		// Gone, or another process, between the check and the read.
		out.Unavailable = CauseVanished.String()
		return out
	}
	page := uint64(os.Getpagesize())
	u := &state.ProcessUsage{
		StartedAt:     unixtime.Of(o.StartTime),
		UptimeSeconds: max(now.Sub(o.StartTime).Seconds(), 0),
		CPUSeconds:    ticksSeconds(ru.cpuTicks),
		RSSBytes:      ru.rssPages * page,
		Threads:       ru.threads,
		TreeMode:      mode,
	}
	rootKey := TreeMember{PID: root.PID, StartTicks: ru.startTicks}
	cpu := map[TreeMember]uint64{rootKey: ru.cpuTicks}
	starts := map[TreeMember]uint64{}
	u.Tasks, u.TreeRSSBytes = ru.threads, ru.rssPages*page
	treeTicks := ru.cpuTicks

	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b TreeMember) int { return a.PID - b.PID })
	read := 0
	for _, m := range ms {
		if m.PID == root.PID || m.PID <= 0 {
			continue
		}
		if read == state.MaxFactsDescendants {
			u.DescendantsMore = true
			break
		}
		read++
		var mu usage
		mu, buf, err = f.readUsage(m.PID, buf)
		if err != nil || mu.state == 'Z' || mu.state == 'X' || (m.StartTicks != 0 && mu.startTicks != m.StartTicks) {
			continue // gone since the tree saw it, or its pid reused
		}
		u.Descendants++
		u.Tasks += mu.threads
		u.TreeRSSBytes += mu.rssPages * page
		treeTicks += mu.cpuTicks
		k := TreeMember{PID: m.PID, StartTicks: mu.startTicks}
		cpu[k] = mu.cpuTicks
		starts[k] = mu.startTicks
	}
	u.TreeCPUSeconds = ticksSeconds(treeTicks)
	u.CPUPercent, u.CPUWindowSeconds = f.recentCPU(rootKey, cpu, starts, treeTicks, o.StartTime, now)
	out.ProcessUsage = u
	return out
}

// recentCPU is the tree's CPU % since a read at least minCPUWindow old, else
// since the root started (ADR-0048).
func (f *Facts) recentCPU(root TreeMember, cpu map[TreeMember]uint64, starts map[TreeMember]uint64, total uint64, rootStart, now time.Time) (pct, window float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.samples[root]
	var base cpuSample
	cur := cpuSample{at: now, cpu: cpu}
	switch {
	case s == nil:
		f.remember(root, &treeSamples{last: cur}, now)
	case now.Sub(s.last.at) >= minCPUWindow:
		base = s.last
		s.prev, s.last = s.last, cur
	case !s.prev.at.IsZero() && now.Sub(s.prev.at) >= minCPUWindow:
		base = s.prev
	}
	if base.at.IsZero() {
		w := now.Sub(rootStart).Seconds()
		if w <= 0 {
			return 0, 0
		}
		return percent(total, w), w
	}
	var bt time.Time
	var btErr error
	var delta uint64
	for m, t := range cpu {
		if was, ok := base.cpu[m]; ok {
			if t > was {
				delta += t - was
			}
			continue
		}
		if m == root {
			continue
		}
		if bt.IsZero() && btErr == nil {
			var secs int64
			secs, btErr = f.host.bootTime()
			bt = time.Unix(secs, 0)
		}
		if btErr == nil && startFromTicks(bt.Unix(), starts[m]).After(base.at) {
			delta += t
		}
	}
	w := now.Sub(base.at).Seconds()
	return percent(delta, w), w
}

// remember keeps a new tree's samples, making room when the memory is
// full: first the trees not read for sampleMaxAge, then any.
func (f *Facts) remember(root TreeMember, s *treeSamples, now time.Time) {
	if len(f.samples) >= maxSamples {
		for k, v := range f.samples {
			if now.Sub(v.last.at) > sampleMaxAge {
				delete(f.samples, k)
			}
		}
		for k := range f.samples {
			if len(f.samples) < maxSamples {
				break
			}
			delete(f.samples, k)
		}
	}
	f.samples[root] = s
}

// percent is ticks of CPU over window seconds, in percent of one core,
// rounded to a tenth.
func percent(ticks uint64, window float64) float64 {
	p := ticksSeconds(ticks) / window * 100
	return float64(int64(p*10+0.5)) / 10
}

// ticksSeconds converts clock ticks (USER_HZ) to seconds.
func ticksSeconds(t uint64) float64 { return float64(t) / userHZ }

// errShortStat: a stat line without the fields the facts need.
var errShortStat = errors.New("short /proc/<pid>/stat")

// readUsage reads pid's stat for the facts, reusing buf.
func (f *Facts) readUsage(pid int, buf []byte) (usage, []byte, error) {
	fh, err := os.Open(f.host.procRoot() + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return usage{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	defer fh.Close()
	n, err := fh.Read(buf[:cap(buf)])
	if err != nil {
		return usage{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	u, err := parseUsage(buf[:n])
	if err != nil {
		return usage{}, buf, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	return u, buf, nil
}

// parseUsage counts fields from the last ')', as the name may hold anything.
func parseUsage(b []byte) (usage, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 || end+2 >= len(b) {
		return usage{}, errShortStat
	}
	fields := bytes.Fields(b[end+1:])
	// fields[0] is field 3.
	const last = 24
	if len(fields) < last-2 || len(fields[0]) == 0 {
		return usage{}, errShortStat
	}
	num := func(field int) (uint64, bool) {
		v, err := strconv.ParseUint(string(fields[field-3]), 10, 64)
		return v, err == nil
	}
	u := usage{state: fields[0][0]}
	ut, ok1 := num(14)
	st, ok2 := num(15)
	th, ok3 := num(20)
	start, ok4 := num(22)
	rss, ok5 := num(24)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return usage{}, errUnparsable
	}
	u.cpuTicks, u.threads, u.startTicks, u.rssPages = ut+st, int(th), start, rss
	return u, nil
}
