package probe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"watchdog/state"
)

// FuzzCheckArtifacts throws arbitrary paths and globs at a small fixed tree
// full of traps (links to itself, to its parent, to the outside, absolute
// and dangling) and checks what must hold for any input: no panic, the
// bounds kept, and nothing said about a check that names a place outside
// the root.
//
//	go test -run xxx -fuzz FuzzCheckArtifacts -fuzztime 10s ./probe/
func FuzzCheckArtifacts(f *testing.F) {
	root, outside := f.TempDir(), f.TempDir()
	for rel, content := range map[string]string{"review.md": "# ok\n", "data.json": `{"a": 1}`, "sub/a.md": "a", "sub/deeper/b.json": "[]"} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.json"), []byte(`{"secret": 1}`), 0o644); err != nil {
		f.Fatal(err)
	}
	for link, target := range map[string]string{
		"self": ".", "again": ".", "up": "..", "out": outside, "outrel": "../" + filepath.Base(outside),
		"abs.json": filepath.Join(outside, "secret.json"), "gone.md": "nowhere", "sub/back": "../sub",
		"loop": "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			f.Fatal(err)
		}
	}
	for _, seed := range []string{
		"review.md", "*.md", "sub/*/b.json", "*/*/*/*", "self/self/self/review.md", "out/secret.json",
		"outrel/*.json", "up/*", "../x", "/etc/passwd", "abs.json", "[", "sub/../../x", "loop/x",
		strings.Repeat("*/", 30) + "x", "a\x00b", "**", "sub/deeper/../../review.md",
	} {
		f.Add(seed, uint8(0))
	}
	lim := artifactLimits{artifacts: 4, pathBytes: 256, segments: 8, globSegments: 4, entries: 200, time: 100 * time.Millisecond}
	kinds := []string{"", state.ArtifactFile, state.ArtifactDir, state.ArtifactJSON}
	f.Fuzz(func(t *testing.T, path string, kind uint8) {
		spec := state.ArtifactSpec{Path: path, Required: true, Kind: kinds[int(kind)%len(kinds)]}
		sc := getScratch()
		defer putScratch(sc)
		c := artifactChecker{ctx: context.Background(), sc: sc, lim: lim, root: root, begun: time.Now(), deadline: time.Now().Add(lim.time)}
		t0 := time.Now()
		ch := c.check(0, spec)
		c.fs.close()
		if took := time.Since(t0); took > lim.time+time.Second {
			t.Fatalf("%q took %s", path, took)
		}
		if c.entries > lim.entries+1 {
			t.Fatalf("%q read %d entries, limit %d", path, c.entries, lim.entries)
		}
		if c.stopped != "" {
			return // over a bound: nothing judged
		}
		for _, s := range []string{ch.Problem, ch.Detail()} {
			if strings.Contains(s, outside) || strings.Contains(s, filepath.Base(outside)) && !strings.Contains(path, filepath.Base(outside)) {
				t.Fatalf("%q: %q names the outside", path, s)
			}
		}
		if ch.Status == ArtifactValid {
			// A valid verdict is about a file below the root, by a path
			// that stays there.
			if ch.Rel != filepath.Clean(ch.Rel) || filepath.IsAbs(ch.Rel) || ch.Rel == ".." || strings.HasPrefix(ch.Rel, "../") {
				t.Fatalf("%q: valid at %q", path, ch.Rel)
			}
			real, err := filepath.EvalSymlinks(filepath.Join(root, ch.Rel))
			if err != nil || (real != root && !strings.HasPrefix(real, root+"/")) {
				t.Fatalf("%q: valid at %q, which is %q (%v)", path, ch.Rel, real, err)
			}
		}
	})
}
