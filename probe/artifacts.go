package probe

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"watchdog/state"
)

// MaxJSONBytes bounds what a `json` artifact check reads: a larger file is
// invalid without being read, so a runaway output cannot make the probe
// allocate without limit.
const MaxJSONBytes = 16 << 20

// maxGlobMatches bounds how many paths one glob may match before the check
// stops looking: any valid match passes the artifact, and a glob over a huge
// directory must not stall a sweep.
const maxGlobMatches = 1000

// ArtifactStatus is the verdict on one declared artifact.
type ArtifactStatus uint8

// Artifact statuses.
const (
	ArtifactValid   ArtifactStatus = iota + 1 // present and passing every check
	ArtifactMissing                           // nothing at the path (or no glob match)
	ArtifactInvalid                           // present but failing validation, or escaping the root
)

// String returns "valid", "missing" or "invalid".
func (s ArtifactStatus) String() string {
	switch s {
	case ArtifactValid:
		return "valid"
	case ArtifactMissing:
		return "missing"
	case ArtifactInvalid:
		return "invalid"
	}
	return "unchecked"
}

// ArtifactCheck is the verdict on one declared artifact, with what was
// seen.
type ArtifactCheck struct {
	Spec   state.ArtifactSpec
	Status ArtifactStatus
	// Rel is the path judged, relative to Root: the spec's path, or the
	// glob match that decided.
	Rel string
	// Root is the artifacts root ("" when none was declared).
	Root string
	// Matches counts the paths a glob matched (1 for a plain path that exists).
	Matches int
	Size    int64
	ModTime time.Time
	// Escapes says the path is absolute, climbs out with "..", or resolves
	// through a symlink outside the root. Such a path is never opened.
	Escapes bool
	// Problem says why the artifact is missing or invalid, e.g.
	// "0 bytes < min 1".
	Problem string
}

// Path is Rel joined to Root, or Rel alone when it is absolute or there is
// no root. It is computed on demand, off the sweep's path.
func (c ArtifactCheck) Path() string {
	if c.Root == "" || filepath.IsAbs(c.Rel) {
		return c.Rel
	}
	if c.Rel == "." {
		return c.Root
	}
	return c.Root + "/" + c.Rel
}

// Evidence describes the check, e.g. "review.md: 0 bytes < min 1".
func (c ArtifactCheck) Evidence(checkedAt time.Time) state.EvidenceRef {
	return c.evidence(unixPtr(checkedAt))
}

func (c ArtifactCheck) evidence(fetchedAt *float64) state.EvidenceRef {
	return state.EvidenceRef{Kind: state.EvidenceArtifact, Path: c.Path(), Detail: c.Detail(), FetchedAt: fetchedAt}
}

// Detail is the Evidence detail line.
func (c ArtifactCheck) Detail() string {
	b := make([]byte, 0, 96)
	b = append(b, c.Rel...)
	b = append(b, ": "...)
	if c.Status == ArtifactValid {
		b = strconv.AppendInt(b, c.Size, 10)
		b = append(b, " bytes, modified "...)
		b = c.ModTime.UTC().AppendFormat(b, time.RFC3339)
	} else {
		b = append(b, c.Problem...)
	}
	if c.Matches > 1 {
		b = append(b, " ("...)
		b = strconv.AppendInt(b, int64(c.Matches), 10)
		b = append(b, " matches)"...)
	}
	if !c.Spec.Required {
		b = append(b, " (optional)"...)
	}
	return string(b)
}

// ArtifactResult is the verdict on a whole artifact contract.
type ArtifactResult struct {
	Delivery state.Delivery
	Checks   []ArtifactCheck
}

// Failing returns the checks that are not valid.
func (r ArtifactResult) Failing() []ArtifactCheck {
	var out []ArtifactCheck
	for _, c := range r.Checks {
		if c.Status != ArtifactValid {
			out = append(out, c)
		}
	}
	return out
}

// CheckArtifacts evaluates an artifact contract (SPEC §6) against the files
// under root. startedAt (Unix seconds) is the entity's start, for
// newer_than_start.
//
// Each spec's path is relative to root and may be a glob (any valid match
// counts). Confinement comes before anything else: an absolute path, a path
// climbing out with "..", or one that resolves through a symlink to a place
// outside root is invalid and is never opened or read. Deciding that takes
// only lstat, readlink and, for globs, listing directories already proven
// to be inside root. A json artifact is opened only after that, with
// O_NOFOLLOW, and must still be the file that was checked.
//
// The delivery, first match wins:
//
//   - no specs: not_expected;
//   - every required artifact valid and nothing invalid: passed;
//   - no required artifact present at all: missing;
//   - anything present but invalid (an optional artifact may be absent,
//     but when present it must be valid): invalid;
//   - otherwise some required artifacts are valid, some missing: partial.
func CheckArtifacts(root string, specs []state.ArtifactSpec, startedAt float64) ArtifactResult {
	sc := getScratch()
	defer putScratch(sc)
	return checkArtifacts(sc, root, specs, startedAt)
}

func checkArtifacts(sc *scratch, root string, specs []state.ArtifactSpec, startedAt float64) ArtifactResult {
	if len(specs) == 0 {
		return ArtifactResult{Delivery: state.DeliveryNotExpected}
	}
	c := artifactChecker{sc: sc, root: root, start: unixTime(startedAt)}
	res := ArtifactResult{Checks: make([]ArtifactCheck, len(specs))}
	var required, valid, present, invalid int
	for i, spec := range specs {
		ch := c.check(spec)
		res.Checks[i] = ch
		if ch.Status == ArtifactInvalid {
			invalid++
		}
		if !spec.Required {
			continue
		}
		required++
		switch ch.Status {
		case ArtifactValid:
			valid++
			present++
		case ArtifactInvalid:
			present++
		}
	}
	switch {
	case valid == required && invalid == 0:
		res.Delivery = state.DeliveryPassed
	case required > 0 && present == 0:
		res.Delivery = state.DeliveryMissing
	case invalid > 0:
		res.Delivery = state.DeliveryInvalid
	default:
		res.Delivery = state.DeliveryPartial
	}
	return res
}

// artifactChecker evaluates the specs of one contract. The root's real
// path is resolved only when a symlink makes it necessary.
type artifactChecker struct {
	sc       *scratch
	root     string
	start    time.Time
	rootReal string
	rootErr  error
	resolved bool
}

func (c *artifactChecker) check(spec state.ArtifactSpec) ArtifactCheck {
	ch := ArtifactCheck{Spec: spec, Rel: spec.Path, Root: c.root}
	rel := spec.Path
	if c.root != "" && plainRel(rel) {
		return c.judge(ch, c.locate(rel)) // the common case, nothing to clean
	}
	switch {
	case strings.TrimSpace(rel) == "":
		return ch.invalid("empty path")
	case filepath.IsAbs(rel):
		ch.Escapes = true
		return ch.invalid("absolute path: artifacts are relative to the artifacts root; not read")
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		ch.Escapes = true
		return ch.invalid("climbs out of the artifacts root; not read")
	}
	if c.root == "" {
		return ch.invalid("no artifacts root declared")
	}
	if strings.ContainsAny(clean, `*?[\`) {
		return c.glob(ch, clean)
	}
	ch.Rel = clean
	f := c.locate(clean)
	return c.judge(ch, f)
}

// plainRel reports whether rel is relative, already clean (no empty, "."
// or ".." component, no trailing slash) and free of glob meta characters:
// the common "review.md", checked in one pass instead of Clean and friends.
func plainRel(rel string) bool {
	if rel == "" || rel[0] == '/' {
		return false
	}
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) {
			switch rel[i] {
			case '*', '?', '[', '\\':
				return false
			case '/':
			default:
				continue
			}
		}
		if seg := rel[start:i]; seg == "" || seg == "." || seg == ".." {
			return false
		}
		start = i + 1
	}
	return true
}

// found is where a path led.
type found struct {
	status  ArtifactStatus // ArtifactValid here means "found"; judge decides
	real    string         // the path to read when symlinks were resolved; "" = root/Rel
	st      unix.Stat_t
	escapes bool
	problem string
}

func (c *artifactChecker) join(rel string) string {
	if rel == "." {
		return c.root
	}
	return c.root + "/" + rel
}

// locate finds a plain relative path under the root. Without symlinks it
// costs one lstat per path component (one for the common "review.md");
// a symlink anywhere sends it to resolve.
func (c *artifactChecker) locate(clean string) found {
	for i := 0; i < len(clean); i++ {
		if clean[i] != '/' {
			continue
		}
		var st unix.Stat_t
		if err := c.sc.statPath(c.root, clean[:i], &st, false); err != nil {
			return statFailure(err)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			return c.resolve(c.join(clean))
		case unix.S_IFDIR:
		default:
			return found{status: ArtifactMissing, problem: "does not exist (" + clean[:i] + " is not a directory)"}
		}
	}
	f := found{status: ArtifactValid}
	if err := c.sc.statPath(c.root, clean, &f.st, false); err != nil {
		return statFailure(err)
	}
	if f.st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return c.resolve(c.join(clean))
	}
	return f
}

func statFailure(err error) found {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return found{status: ArtifactMissing, problem: "does not exist"}
	}
	return found{status: ArtifactInvalid, problem: "cannot be checked: " + err.Error()}
}

// resolve follows the symlinks of full (lstat and readlink only) and
// accepts the result only if it lies inside the root's real path.
func (c *artifactChecker) resolve(full string) found {
	real, err := filepath.EvalSymlinks(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			// Dangling: where would it point? Pointing out of the root is
			// invalid whether or not the target exists (SPEC §6), and the
			// operator's fix differs (the link, not the missing file).
			if target, ok := danglingTarget(full); ok {
				if rootReal, err := c.realRoot(); err == nil && !within(target, rootReal) {
					return found{status: ArtifactInvalid, escapes: true, problem: "symlink points outside the artifacts root (to " + target + ", which does not exist); not read"}
				}
			}
			return found{status: ArtifactMissing, problem: "does not exist (dangling symlink)"}
		}
		return found{status: ArtifactInvalid, problem: "cannot be resolved: " + err.Error()}
	}
	rootReal, err := c.realRoot()
	if err != nil {
		return found{status: ArtifactInvalid, problem: "artifacts root cannot be resolved: " + err.Error()}
	}
	if !within(real, rootReal) {
		return found{status: ArtifactInvalid, escapes: true, problem: "symlink resolves outside the artifacts root (to " + real + "); not read"}
	}
	f := found{status: ArtifactValid, real: real}
	if err := lstatNoEINTR(real, &f.st); err != nil {
		return statFailure(err)
	}
	return f
}

// realRoot is the artifacts root with its symlinks resolved, once.
func (c *artifactChecker) realRoot() (string, error) {
	if !c.resolved {
		c.rootReal, c.rootErr = filepath.EvalSymlinks(c.root)
		c.resolved = true
	}
	return c.rootReal, c.rootErr
}

// danglingTarget follows a chain of symlinks that ends at nothing, without
// opening anything, and returns the absolute path it ends at, with the
// symlinks of its existing ancestors resolved. ok is false when the chain
// cannot be followed (a loop, an unreadable link).
func danglingTarget(full string) (string, bool) {
	p := filepath.Clean(full)
	ended := false
	for range 40 { // the kernel's own limit on a chain of links
		fi, err := os.Lstat(p)
		if err != nil {
			ended = true // p does not exist: the end of the chain
			break
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return "", false // exists after all: not dangling
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = filepath.Clean(t)
	}
	if !ended {
		return "", false // a loop
	}
	// Resolve the deepest existing ancestor, keep the rest as written.
	dir, rest := p, ""
	for dir != "/" && dir != "." {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), true
		}
		dir, rest = filepath.Dir(dir), filepath.Join(filepath.Base(dir), rest)
	}
	return p, true
}

func within(p, root string) bool {
	if p == root {
		return true
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return strings.HasPrefix(p, root) && p[len(root)] == '/'
}

// judge turns a located path into a verdict against the spec.
func (c *artifactChecker) judge(ch ArtifactCheck, f found) ArtifactCheck {
	ch.Escapes = f.escapes
	if f.status != ArtifactValid {
		ch.Status, ch.Problem = f.status, f.problem
		return ch
	}
	ch.Matches = 1
	ch.Size = f.st.Size
	ch.ModTime = time.Unix(f.st.Mtim.Unix())
	mode := f.st.Mode & unix.S_IFMT
	spec := ch.Spec
	switch kind := spec.EffectiveKind(); {
	case kind == state.ArtifactDir:
		if mode != unix.S_IFDIR {
			return ch.invalid("not a directory")
		}
	case mode == unix.S_IFDIR:
		return ch.invalid("is a directory, not a file")
	case mode != unix.S_IFREG:
		return ch.invalid("not a regular file")
	case ch.Size < spec.MinBytes:
		return ch.invalid(strconv.FormatInt(ch.Size, 10) + " bytes < min " + strconv.FormatInt(spec.MinBytes, 10))
	}
	// The start is known only to within a second (see startTimeTolerance),
	// and file times come from the kernel's coarse clock, which lags: a file
	// written right after the start may carry an mtime a little before it.
	if spec.NewerThanStart && !c.start.IsZero() && ch.ModTime.Before(c.start.Add(-startTimeTolerance)) {
		b := make([]byte, 0, 96)
		b = append(b, "modified "...)
		b = ch.ModTime.UTC().AppendFormat(b, time.RFC3339)
		b = append(b, ", before the start "...)
		b = c.start.UTC().AppendFormat(b, time.RFC3339)
		return ch.invalid(string(b))
	}
	if spec.EffectiveKind() == state.ArtifactJSON {
		real := f.real
		if real == "" {
			real = c.join(ch.Rel)
		}
		if problem := checkJSON(real, &f.st); problem != "" {
			return ch.invalid(problem)
		}
	}
	ch.Status = ArtifactValid
	return ch
}

func (ch ArtifactCheck) invalid(problem string) ArtifactCheck {
	ch.Status, ch.Problem = ArtifactInvalid, problem
	return ch
}

// checkJSON reads a confined regular file and reports "" when it parses as
// one JSON value. It opens with O_NOFOLLOW and O_NONBLOCK (a FIFO swapped in
// cannot block the probe) and insists the opened file is the one that was
// checked (same device and inode), so a file replaced by a symlink between
// the check and the open is not followed out of the root.
func checkJSON(path string, checked *unix.Stat_t) string {
	if checked.Size > MaxJSONBytes {
		return "larger than the " + strconv.Itoa(MaxJSONBytes>>20) + " MiB limit for JSON artifacts; not read"
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "cannot be read: " + err.Error()
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "cannot be read: " + err.Error()
	}
	if st.Dev != checked.Dev || st.Ino != checked.Ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "changed while being checked; not read"
	}
	if st.Size > MaxJSONBytes {
		return "larger than the " + strconv.Itoa(MaxJSONBytes>>20) + " MiB limit for JSON artifacts; not read"
	}
	// One byte more than the limit tells a file that grew past it.
	buf := make([]byte, 0, st.Size+1)
	for len(buf) <= MaxJSONBytes {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "cannot be read: " + err.Error()
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	if len(buf) > MaxJSONBytes {
		return "larger than the " + strconv.Itoa(MaxJSONBytes>>20) + " MiB limit for JSON artifacts; not read"
	}
	if !json.Valid(buf) {
		return "not valid JSON"
	}
	return ""
}

// glob matches a pattern component by component, the way filepath.Glob
// would, but never lists or enters a directory outside the root: each
// directory it lists was reached through lstat-checked components, or
// through symlinks resolved and proven to stay inside. filepath.Glob would
// follow a symlinked directory anywhere and list it.
func (c *artifactChecker) glob(ch ArtifactCheck, clean string) ArtifactCheck {
	comps := strings.Split(clean, "/")
	for _, comp := range comps {
		if _, err := filepath.Match(comp, ""); err != nil {
			return ch.invalid("bad glob pattern: " + err.Error())
		}
	}
	var (
		best    ArtifactCheck
		haveBad bool
		matches int
	)
	visit := func(rel string, f found) bool {
		matches++
		m := ch
		m.Rel = rel
		m = c.judge(m, f)
		if m.Status == ArtifactValid {
			best = m
			return false // one valid match is enough
		}
		if !haveBad && m.Status == ArtifactInvalid {
			best, haveBad = m, true
		}
		return matches < maxGlobMatches
	}
	c.walk(".", c.root, comps, visit)
	if matches == 0 {
		ch.Status, ch.Problem = ArtifactMissing, "no file matches"
		return ch
	}
	if best.Status == 0 {
		// Every match was missing by the time it was judged.
		ch.Status, ch.Problem = ArtifactMissing, "no file matches"
		return ch
	}
	best.Matches = matches
	return best
}

// walk matches comps under dir (a real directory inside the root; rel is
// its path relative to the root) and calls visit for every final match,
// until visit returns false. It reports whether to go on.
func (c *artifactChecker) walk(rel, dir string, comps []string, visit func(string, found) bool) bool {
	comp, rest := comps[0], comps[1:]
	var names []string
	if strings.ContainsAny(comp, `*?[\`) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return true // an unreadable directory matches nothing
		}
		for _, e := range entries {
			if ok, _ := filepath.Match(comp, e.Name()); ok {
				names = append(names, e.Name())
			}
		}
	} else {
		names = []string{comp}
	}
	for _, name := range names {
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		p := dir + "/" + name
		f := found{status: ArtifactValid, real: p}
		if err := lstatNoEINTR(p, &f.st); err != nil {
			continue // absent (or vanished since the listing): no match
		}
		if f.st.Mode&unix.S_IFMT == unix.S_IFLNK {
			f = c.resolve(p)
			if f.status == ArtifactMissing {
				continue
			}
		}
		if len(rest) == 0 {
			if !visit(childRel, f) {
				return false
			}
			continue
		}
		if f.escapes {
			// A symlinked directory leading out: whatever lies below is
			// outside the root. Report it, do not enter it.
			if !visit(childRel, f) {
				return false
			}
			continue
		}
		if f.status == ArtifactValid && f.st.Mode&unix.S_IFMT == unix.S_IFDIR {
			if !c.walk(childRel, f.real, rest, visit) {
				return false
			}
		}
	}
	return true
}
