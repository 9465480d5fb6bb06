//go:build !linux

package probe

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// newProcessReader picks gopsutil where there is no Linux /proc.
func newProcessReader(string) processReader { return gopsutilReader{} }

// gopsutilReader is the portable reader; it has no start ticks, so
// identities compare by wall clock within a second.
type gopsutilReader struct{}

func (gopsutilReader) ticks() bool { return false }

func (gopsutilReader) read(pid int, _ *scratch) (procStat, error) {
	if pid > 1<<31-1 {
		return procStat{}, ErrNoSuchProcess
	}
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		if errors.Is(err, process.ErrorProcessNotRunning) {
			return procStat{}, ErrNoSuchProcess
		}
		return procStat{}, mapGopsutilErr(err)
	}
	ms, err := p.CreateTime()
	if err != nil {
		if ok, _ := process.PidExists(int32(pid)); !ok {
			return procStat{}, errVanished
		}
		return procStat{}, mapGopsutilErr(err)
	}
	ps := procStat{startTime: time.UnixMilli(ms)}
	if st, err := p.Status(); err == nil && len(st) > 0 {
		switch st[0] {
		case process.Zombie:
			ps.state = 'Z'
		case process.Running:
			ps.state = 'R'
		case process.Sleep:
			ps.state = 'S'
		case process.Stop:
			ps.state = 'T'
		case process.Idle:
			ps.state = 'I'
		case process.Wait:
			ps.state = 'D'
		default:
			ps.state = '?'
		}
	}
	if ppid, err := p.Ppid(); err == nil {
		ps.ppid = int(ppid)
	}
	return ps, nil
}

func mapGopsutilErr(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return errPermission
	}
	return fmt.Errorf("gopsutil: %w", err)
}
