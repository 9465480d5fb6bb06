//go:build linux && (amd64 || arm64)

package probe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"watchdog/state"
)

// The sweep benchmarks probe N entities per iteration: up to 200 real live
// `sleep` processes (fewer when RLIMIT_NPROC is tight), the rest pids that
// do not exist, each with a heartbeat file and two artifacts in a temp
// directory. BenchmarkSweepFloor does only the unavoidable work for the
// same entities: one read of /proc/<pid>/stat into a reused buffer and one
// stat per file, with prebuilt paths, no parsing and no allocation. The
// target is Probe <= 1.5x the floor per entity.
//
//	go test -run xxx -bench Sweep -benchtime=3x ./probe/
//
// N=10000 is skipped with -short or WATCHDOG_BENCH_SMALL=1.

const benchLive = 200

type benchFixture struct {
	dir      string
	subjects []Subject
	// Floor inputs: NUL-terminated paths built once.
	statPaths [][]byte
	filePaths [][]byte
}

var (
	fixtureMu sync.Mutex
	fixtures  = map[int]*benchFixture{}
	sleepers  []*exec.Cmd
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range sleepers {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	for _, f := range fixtures {
		_ = os.RemoveAll(f.dir)
	}
	os.Exit(code)
}

// liveSleepers returns n live sleep processes shared by every fixture.
func liveSleepers(b *testing.B, n int) []*exec.Cmd {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &lim); err == nil && lim.Cur != unix.RLIM_INFINITY && uint64(n) > lim.Cur/4 {
		n = int(lim.Cur / 4)
	}
	for len(sleepers) < n {
		c := exec.Command("sleep", "3600")
		if err := c.Start(); err != nil {
			b.Logf("started %d sleepers: %v", len(sleepers), err)
			break
		}
		sleepers = append(sleepers, c)
	}
	return sleepers[:min(n, len(sleepers))]
}

// deadPIDs returns n pids that do not exist now, from the top of the pid
// space down, where new processes are least likely to land meanwhile.
func deadPIDs(b *testing.B, n int) []int {
	max := 32768
	if s, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(s))); err == nil {
			max = v
		}
	}
	var out []int
	for pid := max - 1; pid > 1 && len(out) < n; pid-- {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			out = append(out, pid)
		}
	}
	if len(out) < n {
		b.Fatalf("found only %d free pids", len(out))
	}
	return out
}

func fixture(b *testing.B, n int) *benchFixture {
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if f := fixtures[n]; f != nil {
		return f
	}
	h := NewHost()
	dir, err := os.MkdirTemp("", "watchdog-bench-")
	if err != nil {
		b.Fatal(err)
	}
	f := &benchFixture{dir: dir}
	fixtures[n] = f
	now := time.Now()
	live := liveSleepers(b, min(benchLive, n))
	dead := deadPIDs(b, n-len(live))
	for i := 0; i < n; i++ {
		root := filepath.Join(dir, fmt.Sprint(i))
		if err := os.Mkdir(root, 0o755); err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{"hb", "review.md", "result.md"} {
			if err := os.WriteFile(filepath.Join(root, name), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		t := Subject{
			HeartbeatFile: filepath.Join(root, "hb"),
			StartedAt:     now.Add(-time.Minute),
			ArtifactsRoot: root,
			Artifacts: []state.ArtifactSpec{
				{Path: "review.md", Required: true, MinBytes: 1},
				{Path: "result.md", Required: true, MinBytes: 1, NewerThanStart: true},
			},
		}
		if i < len(live) {
			id, err := h.Identify(live[i].Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			t.PID, t.StartTime, t.StartTicks, t.HostID, t.BootID = id.PID, id.StartTime, id.StartTicks, id.HostID, id.BootID
		} else {
			t.PID, t.StartTime = dead[i-len(live)], now.Add(-time.Hour)
			t.HostID = h.HostID()
			t.BootID, _ = h.BootID()
		}
		f.subjects = append(f.subjects, t)
		f.statPaths = append(f.statPaths, []byte("/proc/"+strconv.Itoa(t.PID)+"/stat\x00"))
		for _, p := range []string{t.HeartbeatFile, filepath.Join(root, "review.md"), filepath.Join(root, "result.md")} {
			f.filePaths = append(f.filePaths, []byte(p+"\x00"))
		}
	}
	return f
}

func benchSizes(b *testing.B) []int {
	if testing.Short() || os.Getenv("WATCHDOG_BENCH_SMALL") != "" {
		return []int{1000}
	}
	return []int{1000, 10000}
}

func reportPerEntity(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entity")
}

func BenchmarkSweep(b *testing.B) {
	ctx := b.Context()
	for _, n := range benchSizes(b) {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			f := fixture(b, n)
			h := NewHost()
			now := time.Now()
			var alive, dead int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				alive, dead = 0, 0
				for i := range f.subjects {
					r := h.Probe(ctx, f.subjects[i], now)
					switch r.PID.Liveness {
					case Alive:
						alive++
					case Dead:
						dead++
					}
				}
			}
			b.StopTimer()
			reportPerEntity(b, n)
			if alive+dead != n {
				b.Fatalf("%d alive + %d dead of %d entities", alive, dead, n)
			}
		})
	}
}

func BenchmarkSweepFloor(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			f := fixture(b, n)
			buf := make([]byte, 1024)
			var st unix.Stat_t
			var found int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				found = 0
				for i := range f.subjects {
					if fd, err := openat(f.statPaths[i], unix.O_RDONLY|unix.O_CLOEXEC); err == nil {
						if n, _ := unix.Read(fd, buf); n > 0 {
							found++
						}
						unix.Close(fd)
					}
					for _, p := range f.filePaths[3*i : 3*i+3] {
						rawStat(p, &st)
					}
				}
			}
			b.StopTimer()
			reportPerEntity(b, n)
			if found == 0 {
				b.Fatal("no live process read")
			}
		})
	}
}

// rawStat is fstatat on a prebuilt NUL-terminated path: the floor's stat,
// free of the path copy unix.Stat makes.
func rawStat(path []byte, st *unix.Stat_t) {
	atFDCWD := unix.AT_FDCWD
	unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(st)), 0, 0, 0)
}

// BenchmarkSweepRatio interleaves a floor pass and a probe pass over the
// same entities in every iteration and reports both and their ratio: on a
// shared, noisy machine the two separate benchmarks above can land in
// different weather, while passes taken back to back see the same.
func BenchmarkSweepRatio(b *testing.B) {
	ctx := b.Context()
	for _, n := range benchSizes(b) {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			f := fixture(b, n)
			h := NewHost()
			now := time.Now()
			buf := make([]byte, 1024)
			var st unix.Stat_t
			var floor, probe time.Duration
			for b.Loop() {
				t0 := time.Now()
				for i := range f.subjects {
					if fd, err := openat(f.statPaths[i], unix.O_RDONLY|unix.O_CLOEXEC); err == nil {
						_, _ = unix.Read(fd, buf)
						unix.Close(fd)
					}
					for _, p := range f.filePaths[3*i : 3*i+3] {
						rawStat(p, &st)
					}
				}
				t1 := time.Now()
				for i := range f.subjects {
					h.Probe(ctx, f.subjects[i], now)
				}
				t2 := time.Now()
				floor += t1.Sub(t0)
				probe += t2.Sub(t1)
			}
			per := float64(b.N * n)
			b.ReportMetric(float64(floor.Nanoseconds())/per, "floor-ns/entity")
			b.ReportMetric(float64(probe.Nanoseconds())/per, "probe-ns/entity")
			b.ReportMetric(float64(probe)/float64(floor), "ratio")
		})
	}
}

// BenchmarkProbe is Probe of one entity with a heartbeat file and one
// artifact: the test's own process (healthy), or a pid that does not exist.
func BenchmarkProbe(b *testing.B) {
	h := NewHost()
	now := time.Now()
	dir := b.TempDir()
	for _, name := range []string{"hb", "review.md"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	id, err := h.Identify(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	healthy := Subject{
		PID: id.PID, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID,
		HeartbeatFile: filepath.Join(dir, "hb"), ArtifactsRoot: dir,
		Artifacts: []state.ArtifactSpec{{Path: "review.md", Required: true, MinBytes: 1}},
	}
	gone := healthy
	gone.PID, gone.StartTicks = deadPIDs(b, 1)[0], 0
	for _, bc := range []struct {
		name    string
		subject Subject
		want    Liveness
	}{{"healthy", healthy, Alive}, {"dead", gone, Dead}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := h.Probe(b.Context(), bc.subject, now); r.PID.Liveness != bc.want {
					b.Fatalf("liveness %v, want %v", r.PID.Liveness, bc.want)
				}
			}
		})
	}
}

// BenchmarkProbeAsOwner is the price of examining a healthy entity's
// heartbeat file with its owner's rights (issue 36): the same Probe with
// no proven owner (the daemon's own rights, no switch), with its owner
// the daemon's own uid (no switch either), and with another owner
// (nobody: a locked thread, setgroups, setfsgid, setfsuid and back). As
// root only: another process cannot switch.
func BenchmarkProbeAsOwner(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: only root switches identities")
	}
	h := NewHost()
	now := time.Now()
	// Not b.TempDir: its parent is 0700, which nobody cannot pass.
	dir, err := os.MkdirTemp("", "watchdog-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	hb := filepath.Join(dir, "hb")
	if err := os.WriteFile(hb, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	id, err := h.Identify(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	base := Subject{PID: id.PID, StartTime: id.StartTime, StartTicks: id.StartTicks, HostID: id.HostID, BootID: id.BootID, HeartbeatFile: hb, StartedAt: now.Add(-time.Minute)}
	for _, bc := range []struct {
		name  string
		owner Owner
	}{{"unowned", Owner{}}, {"self", Owner{UID: 0, Known: true}}, {"other", Owner{UID: Nobody, Known: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			s := base
			s.Owner = bc.owner
			for b.Loop() {
				if r := h.Probe(b.Context(), s, now); r.Heartbeat.Source != HeartbeatFile {
					b.Fatalf("heartbeat %+v: the file was not seen", r.Heartbeat)
				}
			}
		})
	}
}
