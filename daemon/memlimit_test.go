package daemon

import "testing"

// TestSoftLimit: the limit is the runtime's memory beside the heap, the
// live heap and half of it over, never less than the floor over.
func TestSoftLimit(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name                                      string
		live, total, objects, unused, free, relsd uint64
		want                                      int64
	}{
		{"a small heap: the floor", 2 * mb, 20 * mb, 3 * mb, 1 * mb, 2 * mb, 4 * mb, (20-3-1-2-4)*mb + 2*mb + headroomFloor},
		{"a large heap: half over", 100 * mb, 300 * mb, 120 * mb, 10 * mb, 50 * mb, 100 * mb, (300-120-10-50-100)*mb + 100*mb + 50*mb},
		{"figures that do not add up: no negative share", 40 * mb, 10 * mb, 20 * mb, 0, 0, 0, 40*mb + 20*mb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := softLimit(tc.live, tc.total, tc.objects, tc.unused, tc.free, tc.relsd); got != tc.want {
				t.Errorf("softLimit = %d MB, want %d MB", got/mb, tc.want/mb)
			}
		})
	}
}

// TestPaceMemoryLeavesTheOperatorsChoice: GOGC or GOMEMLIMIT set, the
// daemon sets no limit of its own.
func TestPaceMemoryLeavesTheOperatorsChoice(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "off")
			if paceMemory() {
				t.Errorf("%s set, and the daemon paces the collector anyway", env)
			}
		})
	}
}
