package daemon

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"watchdog/config"

	"golang.org/x/sys/unix"
)

func TestBudgetFor(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		want  fdBudget
	}{
		// The unit's LimitNOFILE: the connections get their whole cap.
		{65536, fdBudget{Limit: 65536, Own: 64, Conns: 1024, Pidfds: 64448}},
		// Go's raise to a common hard limit.
		{524288, fdBudget{Limit: 524288, Own: 64, Conns: 1024, Pidfds: 523200}},
		{4096, fdBudget{Limit: 4096, Own: 64, Conns: 1024, Pidfds: 3008}},
		// Small limits: the connections get half of what is left.
		{1024, fdBudget{Limit: 1024, Own: 64, Conns: 480, Pidfds: 480}},
		{256, fdBudget{Limit: 256, Own: 64, Conns: 96, Pidfds: 96}},
		{65, fdBudget{Limit: 65, Own: 64, Conns: 0, Pidfds: 1}},
		// No room: every process polled.
		{64, fdBudget{Limit: 64, Own: 64}},
		{10, fdBudget{Limit: 10, Own: 10}},
		{unix.RLIM_INFINITY, fdBudget{Limit: 1<<31 - 1, Own: 64, Conns: 1024, Pidfds: 1<<31 - 1 - 64 - 1024}},
	} {
		got := budgetFor(tc.limit, 1024)
		if got != tc.want {
			t.Errorf("budgetFor(%d) = %+v, want %+v", tc.limit, got, tc.want)
		}
		if got.Own+got.Conns+got.Pidfds != got.Limit {
			t.Errorf("budgetFor(%d) = %+v: the shares do not add up to the limit", tc.limit, got)
		}
	}
}

// TestCheckHeadroom runs itself in a child whose soft fd limit leaves
// fewer than fdHeadroom free (the limit is the whole process's, so it is
// not lowered in the test process itself): the check says so, naming the
// limit, and says nothing once the limit is raised again.
func TestCheckHeadroom(t *testing.T) {
	if os.Getenv("WATCHDOG_TEST_HEADROOM_CHILD") == "1" {
		headroomChild(t)
		return
	}
	if err := checkHeadroom(fdHeadroom); err != nil {
		t.Fatalf("checkHeadroom in the test process: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckHeadroom$", "-test.v")
	cmd.Env = append(os.Environ(), "WATCHDOG_TEST_HEADROOM_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCheckHeadroom") {
		t.Fatalf("the child under a low fd limit: %v\n%s", err, out)
	}
}

func headroomChild(t *testing.T) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// ReadDir's own fd is closed again: len(ents)-1 are open; leave
	// fdHeadroom-2 of them free.
	low := old
	low.Cur = uint64(len(ents) - 1 + fdHeadroom - 2)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	err = checkHeadroom(fdHeadroom)
	if rerr := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil || !strings.Contains(err.Error(), "out of file descriptors") || !strings.Contains(err.Error(), "LimitNOFILE") {
		t.Errorf("checkHeadroom short of fds: %v, want an error naming the shortage and LimitNOFILE", err)
	}
	t.Logf("short of fds: %v", err)
	if err := checkHeadroom(fdHeadroom); err != nil {
		t.Errorf("checkHeadroom with the limit restored: %v", err)
	}
}

// TestReadyReadsTheHeadroom: /readyz is not ready while the store watch
// last found too few fds free, and ready again once it found enough.
func TestReadyReadsTheHeadroom(t *testing.T) {
	short := errors.New("out of file descriptors: test")
	for _, tc := range []struct {
		name  string
		fdErr error
		want  error
	}{
		{"enough free", nil, nil},
		{"too few free", short, short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			d := &daemon{storeChecked: now, lastSweep: now, sweepGap: time.Minute, fdErr: tc.fdErr}
			if got := d.ready(); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
				t.Errorf("ready() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUnitLimitMatchesTheDocs: the unit's LimitNOFILE, shared by
// budgetFor, gives the pidfd count the unit's comment, its README and the
// operator's guide state.
func TestUnitLimitMatchesTheDocs(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	unit := read("../deploy/systemd/watchdog.service")
	m := regexp.MustCompile(`(?m)^LimitNOFILE=(\d+)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("the unit sets no LimitNOFILE=N")
	}
	limit, _ := strconv.ParseUint(m[1], 10, 64)
	b := budgetFor(limit, config.Default().HTTP.MaxConnections+connReserve)
	plain := strconv.Itoa(b.Pidfds)
	grouped := plain[:len(plain)-3] + "," + plain[len(plain)-3:]
	for path, want := range map[string]string{
		"../deploy/systemd/watchdog.service": plain + " processes",
		"../deploy/systemd/README.md":        grouped + " watched processes",
		"../docs/guide.md":                   grouped + " processes by pidfd",
	} {
		if !strings.Contains(strings.Join(strings.Fields(read(path)), " "), want) {
			t.Errorf("%s does not say %q (LimitNOFILE=%d leaves %+v)", path, want, limit, b)
		}
	}
}

// TestHTTPMaxFitsTheBudget: the listener's cap is http.max_connections
// when the budget's connection share holds it and its probes' reserve,
// and shrinks to the share under a small fd limit (never below 1); an
// unknown limit leaves it alone.
func TestHTTPMaxFitsTheBudget(t *testing.T) {
	for _, tc := range []struct {
		limit uint64
		conns int
		want  int
	}{
		{65536, 1024, 1024},
		{1024, 1024, 480 - connReserve},
		{256, 1024, 96 - connReserve},
		{70, 1024, 1},
		{0, 1024, 1024},
	} {
		b := fdBudget{}
		if tc.limit > 0 {
			b = budgetFor(tc.limit, tc.conns+connReserve)
		}
		if got := httpMax(tc.conns, b); got != tc.want {
			t.Errorf("limit %d, max_connections %d: cap %d, want %d (%+v)", tc.limit, tc.conns, got, tc.want, b)
		}
	}
}
