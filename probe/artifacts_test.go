package probe

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"watchdog/state"
)

// artifactTree builds a root with every kind of artifact, and an outside
// directory that symlinks lead to.
func artifactTree(t *testing.T) (root, outside string, start time.Time) {
	t.Helper()
	root, outside = t.TempDir(), t.TempDir()
	now := time.Now()
	start = now.Add(-time.Hour)
	write := func(dir, rel, content string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "review.md", "# review\n")
	write(root, "empty.md", "")
	write(root, "data.json", `{"ok": true}`)
	write(root, "bad.json", `{"ok": `)
	write(root, "reports/a.md", "a")
	write(root, "reports/b.txt", "b")
	old := write(root, "old.md", "stale")
	if err := os.Chtimes(old, start.Add(-time.Hour), start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A JSON file over the limit, sparse: it must be judged without being read.
	big, err := os.Create(filepath.Join(root, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(MaxJSONBytes + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := syscall.Mkfifo(filepath.Join(root, "pipe.json"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Outside the root: a valid JSON file (it would pass if it were
	// followed and read), a FIFO (opening it for reading would block the
	// probe), an unreadable secret.
	secret := write(outside, "secret.json", `{"secret": true}`)
	if err := os.Chmod(secret, 0); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(outside, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(outside, "inner/x.json", `{}`)

	link(filepath.Join(outside, "secret.json"), "leak.json")
	link(filepath.Join(outside, "fifo.json"), "fifo.json")
	link("../"+filepath.Base(outside)+"/secret.json", "relative-leak.json")
	link(outside, "outdir")
	link("review.md", "alias.md")
	link("reports", "reports-alias")
	link("nowhere.md", "dangling.md")
	link("/nonexistent/x", "dangling-out-abs.md")
	link("../"+filepath.Base(outside)+"/never.md", "dangling-out-rel.md")
	link("dangling.md", "dangling-chain.md")
	link("loop-b.md", "loop-a.md")
	link("loop-a.md", "loop-b.md")
	link(filepath.Join(root, "review.md"), "absolute-inside.md")
	return root, outside, start
}

// backends runs f once per confinement backend: openat2 (where the kernel
// has it) and os.Root, which is what other systems and older kernels use.
func backends(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	for _, portable := range []bool{false, true} {
		name := "openat2"
		if portable {
			name = "os.Root"
		} else if !beneathSupported() {
			t.Log("openat2 unavailable: only os.Root is tested")
			continue
		}
		t.Run(name, func(t *testing.T) {
			forcePortableRoot = portable
			defer func() { forcePortableRoot = false }()
			f(t)
		})
	}
}

func TestCheckArtifact(t *testing.T) { backends(t, testCheckArtifact) }

func testCheckArtifact(t *testing.T) {
	ctx := t.Context()
	root, outside, start := artifactTree(t)
	file := func(path string) state.ArtifactSpec { return state.ArtifactSpec{Path: path, Required: true} }
	for _, tc := range []struct {
		name    string
		spec    state.ArtifactSpec
		status  ArtifactStatus
		escapes bool
		problem string // substring
	}{
		// Success cases
		{"plain file", file("review.md"), ArtifactValid, false, ""},
		{"min bytes met", state.ArtifactSpec{Path: "review.md", MinBytes: 9}, ArtifactValid, false, ""},
		{"nested file", file("reports/a.md"), ArtifactValid, false, ""},
		{"dot-dot that stays inside", file("reports/../review.md"), ArtifactValid, false, ""},
		{"dir kind", state.ArtifactSpec{Path: "reports", Kind: "dir"}, ArtifactValid, false, ""},
		{"json kind", state.ArtifactSpec{Path: "data.json", Kind: "json"}, ArtifactValid, false, ""},
		{"newer than start", state.ArtifactSpec{Path: "review.md", NewerThanStart: true}, ArtifactValid, false, ""},
		{"symlink inside the root", file("alias.md"), ArtifactValid, false, ""},
		{"through a symlinked dir inside", file("reports-alias/a.md"), ArtifactValid, false, ""},
		{"glob", file("reports/*.md"), ArtifactValid, false, ""},
		{"glob over dirs", file("*/a.md"), ArtifactValid, false, ""},
		{"glob, one valid match is enough", state.ArtifactSpec{Path: "*.md", MinBytes: 1}, ArtifactValid, false, ""},

		// Missing
		{"absent", file("nope.md"), ArtifactMissing, false, "does not exist"},
		{"absent below a file", file("review.md/x"), ArtifactMissing, false, "not a directory"},
		{"dangling symlink", file("dangling.md"), ArtifactMissing, false, "dangling"},
		{"chain of links ending inside at nothing", file("dangling-chain.md"), ArtifactMissing, false, "dangling"},
		{"glob without match", file("*.pdf"), ArtifactMissing, false, "no file matches"},

		// Invalid
		{"min bytes", state.ArtifactSpec{Path: "empty.md", MinBytes: 1}, ArtifactInvalid, false, "0 bytes < min 1"},
		{"file kind on a dir", file("reports"), ArtifactInvalid, false, "is a directory"},
		{"dir kind on a file", state.ArtifactSpec{Path: "review.md", Kind: "dir"}, ArtifactInvalid, false, "not a directory"},
		{"invalid json", state.ArtifactSpec{Path: "bad.json", Kind: "json"}, ArtifactInvalid, false, "not valid JSON"},
		{"empty json", state.ArtifactSpec{Path: "empty.md", Kind: "json"}, ArtifactInvalid, false, "not valid JSON"},
		{"json over the limit", state.ArtifactSpec{Path: "big.json", Kind: "json"}, ArtifactInvalid, false, "16 MiB limit"},
		{"fifo is no file", state.ArtifactSpec{Path: "pipe.json", Kind: "json"}, ArtifactInvalid, false, "not a regular file"},
		{"older than start", state.ArtifactSpec{Path: "old.md", NewerThanStart: true}, ArtifactInvalid, false, "before the start"},
		{"bad glob", file("[.md"), ArtifactInvalid, false, "bad glob pattern"},
		{"NUL in the path", file("review.md\x00.txt"), ArtifactInvalid, false, "cannot be checked"},
		{"glob, every match invalid", state.ArtifactSpec{Path: "reports/*", MinBytes: 5}, ArtifactInvalid, false, "bytes < min 5"},

		// Escaping the root: invalid, never read.
		{"absolute", file("/etc/passwd"), ArtifactInvalid, true, "absolute"},
		{"absolute outside file", file(filepath.Join(outside, "inner/x.json")), ArtifactInvalid, true, "absolute"},
		{"dot-dot", file("../x"), ArtifactInvalid, true, "climbs out"},
		{"dot-dot after a dir", file("reports/../../x"), ArtifactInvalid, true, "climbs out"},
		{"symlink to a valid outside JSON", state.ArtifactSpec{Path: "leak.json", Kind: "json"}, ArtifactInvalid, true, "outside the artifacts root"},
		{"relative symlink out", file("relative-leak.json"), ArtifactInvalid, true, "outside the artifacts root"},
		{"symlink to an outside FIFO", state.ArtifactSpec{Path: "fifo.json", Kind: "json"}, ArtifactInvalid, true, "outside the artifacts root"},
		{"through a symlinked dir out", state.ArtifactSpec{Path: "outdir/inner/x.json", Kind: "json"}, ArtifactInvalid, true, "outside the artifacts root"},
		{"glob through a symlinked dir out", file("outdir/*/x.json"), ArtifactInvalid, true, "outside the artifacts root"},
		{"dangling absolute symlink out", file("dangling-out-abs.md"), ArtifactInvalid, true, "outside the artifacts root"},
		{"dangling relative symlink out", file("dangling-out-rel.md"), ArtifactInvalid, true, "outside the artifacts root"},
		{"symlink loop", file("loop-a.md"), ArtifactInvalid, false, "cannot be resolved"},
		// An absolute link is never followed, even to a place inside: the
		// lookup cannot tell it from one leading out without leaving.
		{"absolute symlink to inside", file("absolute-inside.md"), ArtifactInvalid, true, "absolute links count as outside"},
		{"glob matching an escaping symlink", state.ArtifactSpec{Path: "*.json", Kind: "json", MinBytes: 1 << 30}, ArtifactInvalid, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := CheckArtifacts(ctx, root, []state.ArtifactSpec{tc.spec}, start)
			c := res.Checks[0]
			if c.Status != tc.status || c.Escapes != tc.escapes || !strings.Contains(c.Problem, tc.problem) {
				t.Errorf("got %v escapes=%v %q; want %v escapes=%v %q", c.Status, c.Escapes, c.Problem, tc.status, tc.escapes, tc.problem)
			}
			if d := c.Detail(); !strings.HasPrefix(d, c.Rel+": ") {
				t.Errorf("detail %q does not start with the path", d)
			}
			// Nothing said about a check names the outside, unless the
			// spec itself did.
			if !strings.Contains(tc.spec.Path, outside) {
				ev := c.Evidence(time.Now())
				for _, s := range []string{c.Problem, c.Detail(), c.Path(), ev.Path, ev.Detail} {
					if strings.Contains(s, outside) || strings.Contains(s, filepath.Base(outside)+"/") {
						t.Errorf("names the outside: %q", s)
					}
				}
			}
		})
	}
}

func TestPlainRel(t *testing.T) {
	for rel, want := range map[string]bool{
		"review.md": true, "a/b/c.json": true, ".hidden": true, "a..b": true,
		"": false, "/abs": false, "a//b": false, "a/": false, "./a": false, "a/./b": false,
		"..": false, "../a": false, "a/..": false, "*.md": false, "a/[b]": false, "a?": false, `a\b`: false,
	} {
		if got := plainRel(rel); got != want {
			t.Errorf("plainRel(%q) = %v, want %v", rel, got, want)
		}
		// Plain paths are exactly those Clean leaves alone (meta aside).
		if want && filepath.Clean(rel) != rel {
			t.Errorf("%q is plain but not clean", rel)
		}
	}
}

func TestCheckArtifactsFIFOOutsideNotOpened(t *testing.T) {
	ctx := t.Context()
	// Had the probe opened the FIFO behind fifo.json for reading without
	// O_NONBLOCK, it would block here forever; with the confinement check
	// it returns at once, and no reader ever appeared on the FIFO: opening
	// its write side without blocking fails with ENXIO.
	root, outside, start := artifactTree(t)
	CheckArtifacts(ctx, root, []state.ArtifactSpec{{Path: "fifo.json", Kind: "json", Required: true}}, start)
	fd, err := syscall.Open(filepath.Join(outside, "fifo.json"), syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		syscall.Close(fd)
		t.Fatal("the outside FIFO has a reader")
	}
	if err != syscall.ENXIO {
		t.Fatalf("open fifo for writing: %v", err)
	}
}

func TestCheckArtifactsDelivery(t *testing.T) {
	ctx := t.Context()
	root, _, start := artifactTree(t)
	req := func(p string) state.ArtifactSpec { return state.ArtifactSpec{Path: p, Required: true, MinBytes: 1} }
	opt := func(p string) state.ArtifactSpec { return state.ArtifactSpec{Path: p, MinBytes: 1} }
	for _, tc := range []struct {
		name  string
		specs []state.ArtifactSpec
		want  state.Delivery
	}{
		{"no contract", nil, state.DeliveryNotExpected},
		{"all required valid", []state.ArtifactSpec{req("review.md"), req("reports/a.md")}, state.DeliveryPassed},
		{"optional absent is fine", []state.ArtifactSpec{req("review.md"), opt("nope.md")}, state.DeliveryPassed},
		{"only optional, absent", []state.ArtifactSpec{opt("nope.md")}, state.DeliveryPassed},
		{"some required valid", []state.ArtifactSpec{req("review.md"), req("nope.md")}, state.DeliveryPartial},
		{"none required present", []state.ArtifactSpec{req("nope.md"), req("nada.md"), opt("review.md")}, state.DeliveryMissing},
		{"required present but invalid", []state.ArtifactSpec{req("empty.md")}, state.DeliveryInvalid},
		{"valid, invalid and missing", []state.ArtifactSpec{req("review.md"), req("empty.md"), req("nope.md")}, state.DeliveryInvalid},
		{"optional present but invalid", []state.ArtifactSpec{req("review.md"), opt("empty.md")}, state.DeliveryInvalid},
		{"escaping path", []state.ArtifactSpec{req("review.md"), req("../etc/passwd")}, state.DeliveryInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckArtifacts(ctx, root, tc.specs, start).Delivery; got != tc.want {
				t.Errorf("delivery %v, want %v", got, tc.want)
			}
		})
	}
	if got := CheckArtifacts(ctx, "", []state.ArtifactSpec{req("review.md")}, unixAt(0)); got.Delivery != state.DeliveryInvalid {
		t.Errorf("no root: %v", got.Delivery)
	}
	if got := CheckArtifacts(ctx, filepath.Join(root, "absent"), []state.ArtifactSpec{req("review.md")}, unixAt(0)); got.Delivery != state.DeliveryMissing {
		t.Errorf("absent root: %v", got.Delivery)
	}
}
