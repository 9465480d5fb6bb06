package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/internal/testenv"
	"watchdog/state"
)

func globs(n int, format string) []state.ArtifactSpec {
	specs := make([]state.ArtifactSpec, n)
	for i := range specs {
		path := format
		if strings.Contains(format, "%") {
			path = fmt.Sprintf(format, i)
		}
		specs[i] = state.ArtifactSpec{Path: path, Required: true}
	}
	return specs
}

// TestArtifactBounds shows each bound stopping a check: promptly, delivery
// unknown, the bound named. The defaults are the real ones unless a row
// lowers one to make it reachable with a small tree.
func TestArtifactBounds(t *testing.T) {
	poison := t.TempDir()
	testenv.SelfLinks(t, poison)
	tree := t.TempDir()
	testenv.BigDir(t, tree, 5000)
	if err := os.WriteFile(filepath.Join(tree, "review.md"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	backends(t, func(t *testing.T) { testArtifactBounds(t, poison, tree) })
}

func testArtifactBounds(t *testing.T, poison, tree string) {
	lower := func(f func(*artifactLimits)) artifactLimits {
		l := defaultArtifactLimits
		f(&l)
		return l
	}
	for _, tc := range []struct {
		name    string
		lim     artifactLimits
		root    string
		specs   []state.ArtifactSpec
		stopped string // substring of Stopped; "" = the check finishes
		within  time.Duration
	}{
		// Issue 11's poison: 30 "*/" components over two self-links.
		{"30-level glob over self-links", defaultArtifactLimits, poison, globs(1, strings.Repeat("*/", 30)+"x"), "artifacts[0] has 31 path components (limit 16)", time.Second},
		{"6 wildcards over the whole file system", defaultArtifactLimits, "/", globs(1, "*/*/*/*/*/*/nomatch"), "artifacts[0] has 6 components with wildcards (limit 4)", time.Second},
		// Within the registration limits, the walk's own bounds stop it.
		{"4 wildcards over the whole file system", defaultArtifactLimits, "/", globs(1, "*/*/*/*/nomatch"), "", 5 * time.Second},
		{"1,000 globs over a big directory", defaultArtifactLimits, tree, globs(1000, "big/nomatch-%d-*"), "the contract declares 1000 artifacts (limit 100)", time.Second},
		{"100 globs over a big directory", defaultArtifactLimits, tree, globs(100, "big/nomatch-%d-*"), "(limit ", 5 * time.Second}, // entries, or on a slow machine the 200 ms clock: either stops it
		{"self-links within the limits", lower(func(l *artifactLimits) { l.entries = 20 }), poison, globs(1, "*/*/*/*/x"), "visited 20 directory entries (limit 20)", time.Second},
		{"a path too long", defaultArtifactLimits, tree, globs(1, strings.Repeat("a", state.MaxArtifactPathBytes+1)), "artifacts[0] is a path of 1025 bytes (limit 1024)", time.Second},
		{"time", lower(func(l *artifactLimits) { l.time = time.Nanosecond }), tree, globs(3, "big/x%d*"), "(limit 1ns)", time.Second},

		// Success cases: at the bounds, the check finishes.
		{"as many artifacts as allowed", defaultArtifactLimits, tree, append(globs(state.MaxArtifacts-1, "nope-%d.md"), state.ArtifactSpec{Path: "review.md", Required: true}), "", 5 * time.Second},
		{"one glob over the big directory", defaultArtifactLimits, tree, globs(1, "big/f0499*"), "", 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := getScratch()
			defer putScratch(sc)
			t0 := time.Now()
			res := checkArtifacts(t.Context(), sc, tc.lim, tc.root, tc.specs, unixAt(0))
			took := time.Since(t0)
			if took > tc.within+tc.lim.time {
				t.Errorf("took %s, want under %s", took, tc.within+tc.lim.time)
			}
			if tc.root == "/" && tc.stopped == "" {
				// Whether the entries or the clock stops a walk of the
				// whole file system depends on the machine; that one does
				// is the point.
				if res.Stopped == "" || res.Delivery != state.DeliveryUnknown {
					t.Fatalf("a walk of / finished: %+v", res)
				}
				if !strings.Contains(res.Stopped, "directory entries") && !strings.Contains(res.Stopped, "took longer than allowed") {
					t.Errorf("stopped by %q", res.Stopped)
				}
				return
			}
			if tc.stopped == "" {
				if res.Stopped != "" || res.Delivery == state.DeliveryUnknown {
					t.Fatalf("stopped: %q (delivery %s)", res.Stopped, res.Delivery)
				}
				return
			}
			if res.Delivery != state.DeliveryUnknown || !strings.Contains(res.Stopped, tc.stopped) || res.Interrupted {
				t.Fatalf("delivery %s, stopped %q interrupted %v; want unknown, %q", res.Delivery, res.Stopped, res.Interrupted, tc.stopped)
			}
			// The evidence names the bound and where it stopped.
			o := Observations{Artifacts: res}
			if ev := o.Cited(Cites{ArtifactStop: true}); len(ev) != 1 || ev[0].Path != tc.root || !strings.Contains(ev[0].Detail, tc.stopped) {
				t.Errorf("evidence %+v", ev)
			}
		})
	}
}

// TestArtifactCheckEntriesNeverExceeded: however the globs are laid out,
// a check reads no more directory entries than its bound.
func TestArtifactCheckEntriesNeverExceeded(t *testing.T) {
	tree := t.TempDir()
	testenv.BigDir(t, tree, 300)
	for _, limit := range []int{1, 63, 64, 65, 299, 300, 301, 1000} {
		lim := defaultArtifactLimits
		lim.entries = limit
		c := artifactChecker{ctx: context.Background(), sc: getScratch(), lim: lim, root: tree, deadline: time.Now().Add(time.Minute)}
		for i, spec := range globs(5, "big/nomatch-%d-*") {
			c.check(i, spec)
			if c.stopped != "" {
				break
			}
		}
		c.fs.close()
		putScratch(c.sc)
		if c.entries > limit+1 {
			t.Errorf("limit %d: read %d entries", limit, c.entries)
		}
		if want := limit < 5*300; want != (c.stopped != "") {
			t.Errorf("limit %d: stopped %q", limit, c.stopped)
		}
	}
}

func TestArtifactCheckFollowsTheCallersContext(t *testing.T) {
	tree := t.TempDir()
	testenv.BigDir(t, tree, 10)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := CheckArtifacts(ctx, tree, globs(2, "big/*%d"), unixAt(0))
	if res.Delivery != state.DeliveryUnknown || !res.Interrupted || !strings.Contains(res.Stopped, "context canceled") {
		t.Fatalf("%+v", res)
	}
}

// TestRootEscapeErrorRecognised keeps unwrapErrno honest about os.Root's
// unexported escape error, which it recognises by its text.
func TestRootEscapeErrorRecognised(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink("/", filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"out/etc", "../x"} {
		_, err := r.Stat(name)
		if got := unwrapErrno(err); !errors.Is(got, errEscapes) {
			t.Errorf("%s: %v reads %v, not errEscapes", name, err, got)
		}
	}
}
