package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"watchdog/internal/unixtime"
	"watchdog/state"
)

// MaxJSONBytes bounds what a `json` artifact check reads: a larger file is
// invalid without being read.
const MaxJSONBytes = 16 << 20

// maxGlobMatches bounds one glob, so a huge directory cannot stall a sweep.
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
	// Escapes says the path leaves the root; nothing outside is opened or reported.
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
	return c.evidence(unixtime.Of(checkedAt))
}

func (c ArtifactCheck) evidence(fetchedAt unixtime.Time) state.EvidenceRef {
	return state.EvidenceRef{Kind: state.EvidenceArtifact, Path: c.Path(), Detail: c.Detail(), FetchedAt: fetchedAt}
}

// Detail is the Evidence detail line.
func (c ArtifactCheck) Detail() string {
	var b strings.Builder
	if c.Status == ArtifactValid {
		fmt.Fprintf(&b, "%s: %d bytes, modified %s", c.Rel, c.Size, c.ModTime.UTC().Format(time.RFC3339))
	} else {
		b.WriteString(c.Rel + ": " + c.Problem)
	}
	if c.Matches > 1 {
		fmt.Fprintf(&b, " (%d matches)", c.Matches)
	}
	if !c.Spec.Required {
		b.WriteString(" (optional)")
	}
	return b.String()
}

// ArtifactResult is the verdict on a whole artifact contract.
type ArtifactResult struct {
	Delivery state.Delivery
	// Checks are the artifacts judged, in the contract's order; a check
	// that stopped at a bound holds only those judged before it stopped.
	Checks []ArtifactCheck
	// Root is the artifacts root the contract was checked under.
	Root string
	// Stopped names the bound that stopped the check (delivery unknown); "" when it finished.
	Stopped string
	// Interrupted says the caller's context stopped the check: not a finding.
	Interrupted bool
}

// stopEvidence names the bound that stopped the check; its path is the
// root, the one path it can name for sure without looking further.
func (r ArtifactResult) stopEvidence(fetchedAt unixtime.Time) state.EvidenceRef {
	return state.EvidenceRef{Kind: state.EvidenceArtifact, Path: r.Root, Detail: "artifact check stopped: " + r.Stopped, FetchedAt: fetchedAt}
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

// artifactLimits are the bounds of one check (state.MaxArtifact*); tests
// lower them.
type artifactLimits struct {
	artifacts, pathBytes, segments, globSegments, entries int
	time                                                  time.Duration
}

var defaultArtifactLimits = artifactLimits{
	artifacts:    state.MaxArtifacts,
	pathBytes:    state.MaxArtifactPathBytes,
	segments:     state.MaxArtifactPathSegments,
	globSegments: state.MaxArtifactGlobSegments,
	entries:      state.MaxArtifactEntries,
	time:         state.MaxArtifactCheckTime,
}

// CheckArtifacts evaluates an artifact contract against the files under root
// (ADR-0010). Confinement is by construction: every lookup goes through one
// root handle (confine.go). Bounds are state.MaxArtifact*; a check over one
// reads delivery unknown (docs/reference/state-model.md, Probing).
func CheckArtifacts(ctx context.Context, root string, specs []state.ArtifactSpec, startedAt time.Time) ArtifactResult {
	sc := getScratch()
	defer putScratch(sc)
	return checkArtifacts(ctx, sc, defaultArtifactLimits, root, specs, startedAt)
}

func checkArtifacts(ctx context.Context, sc *scratch, lim artifactLimits, root string, specs []state.ArtifactSpec, startedAt time.Time) ArtifactResult {
	if len(specs) == 0 {
		return ArtifactResult{Delivery: state.DeliveryNotExpected}
	}
	res := ArtifactResult{Root: root}
	if len(specs) > lim.artifacts {
		res.Delivery = state.DeliveryUnknown
		res.Stopped = fmt.Sprintf("the contract declares %d artifacts (limit %d)", len(specs), lim.artifacts)
		return res
	}
	begun := time.Now()
	c := artifactChecker{ctx: ctx, sc: sc, lim: lim, root: root, start: startedAt, begun: begun, deadline: begun.Add(lim.time)}
	defer c.fs.close()
	res.Checks = make([]ArtifactCheck, 0, len(specs))
	var required, valid, present, invalid int
	for i, spec := range specs {
		if c.over() {
			break
		}
		ch := c.check(i, spec)
		if c.stopped != "" {
			break // a check cut short judged nothing
		}
		res.Checks = append(res.Checks, ch)
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
	case c.stopped != "":
		res.Delivery, res.Stopped, res.Interrupted = state.DeliveryUnknown, c.stopped, c.interrupted
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

// artifactChecker evaluates the specs of one contract. The root is opened
// on first use, once.
type artifactChecker struct {
	ctx   context.Context
	sc    *scratch
	lim   artifactLimits
	root  string
	start time.Time

	fs      rootFS
	opened  bool
	rootErr error // opening the root failed

	begun, deadline time.Time
	entries         int    // directory entries read so far
	stopped         string // the bound hit; "" while within bounds
	interrupted     bool   // stopped by ctx
}

// over reports whether the check must stop: a bound hit, ctx done, or time up.
func (c *artifactChecker) over() bool {
	if c.stopped != "" {
		return true
	}
	if err := c.ctx.Err(); err != nil {
		c.stopped, c.interrupted = fmt.Sprintf("interrupted by the caller (%v)", err), true
		return true
	}
	if now := time.Now(); now.After(c.deadline) {
		// The limit, not the elapsed time: the text is stored, and one that
		// differs at every sweep would be rewritten at every sweep.
		c.stopped = fmt.Sprintf("took longer than allowed (limit %s)", c.lim.time)
		return true
	}
	return false
}

// openRoot opens the root on first use and reports whether it is open.
func (c *artifactChecker) openRoot() bool {
	if !c.opened {
		c.opened = true
		c.fs, c.rootErr = openRootFS(c.root, c.sc)
	}
	return c.rootErr == nil
}

// rootFailure is what every artifact reads when the root cannot be opened.
func (c *artifactChecker) rootFailure() found {
	if errors.Is(c.rootErr, syscall.ENOENT) || errors.Is(c.rootErr, syscall.ENOTDIR) {
		return found{status: ArtifactMissing, problem: "does not exist (no artifacts root directory)"}
	}
	return found{status: ArtifactInvalid, problem: "cannot be checked: artifacts root: " + c.rootErr.Error()}
}

func (c *artifactChecker) check(i int, spec state.ArtifactSpec) ArtifactCheck {
	ch := ArtifactCheck{Spec: spec, Rel: spec.Path, Root: c.root}
	rel := spec.Path
	if len(rel) > c.lim.pathBytes {
		c.stopped = fmt.Sprintf("artifacts[%d] is a path of %d bytes (limit %d)", i, len(rel), c.lim.pathBytes)
		return ch
	}
	switch segs, wild := state.PathShape(rel); {
	case segs > c.lim.segments:
		c.stopped = fmt.Sprintf("artifacts[%d] has %d path components (limit %d)", i, segs, c.lim.segments)
		return ch
	case wild > c.lim.globSegments:
		c.stopped = fmt.Sprintf("artifacts[%d] has %d components with wildcards (limit %d)", i, wild, c.lim.globSegments)
		return ch
	}
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
	if strings.ContainsAny(clean, state.ArtifactGlobMeta) {
		return c.glob(ch, clean)
	}
	ch.Rel = clean
	return c.judge(ch, c.locate(clean))
}

// plainRel reports whether rel is relative, clean and free of glob meta
// characters: the common case, checked in one pass.
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
	e       fileEntry
	escapes bool
	problem string
}

// locate finds a clean relative path below the root, following a final
// symlink through the root handle.
func (c *artifactChecker) locate(clean string) found {
	if !c.openRoot() {
		return c.rootFailure()
	}
	f := found{status: ArtifactValid}
	if err := c.fs.lstat(clean, &f.e); err != nil {
		return lookupFailure(err, false)
	}
	if f.e.kind == kindSymlink {
		if err := c.fs.stat(clean, &f.e); err != nil {
			return lookupFailure(err, true)
		}
	}
	return f
}

// lookupFailure turns a failed confined lookup into a verdict. Its words
// come from the errno alone: nothing names a symlink's target.
func lookupFailure(err error, viaSymlink bool) found {
	switch {
	case errors.Is(err, errEscapes):
		// Pointing out of the root is invalid whether or not the target exists.
		return found{status: ArtifactInvalid, escapes: true, problem: "a symlink on the way leads outside the artifacts root (absolute links count as outside); not read"}
	case errors.Is(err, syscall.ENOENT):
		if viaSymlink {
			return found{status: ArtifactMissing, problem: "does not exist (dangling symlink)"}
		}
		return found{status: ArtifactMissing, problem: "does not exist"}
	case errors.Is(err, syscall.ENOTDIR):
		return found{status: ArtifactMissing, problem: "does not exist (a component on the way is not a directory)"}
	case errors.Is(err, syscall.ELOOP):
		return found{status: ArtifactInvalid, problem: "cannot be resolved: " + err.Error()}
	}
	return found{status: ArtifactInvalid, problem: "cannot be checked: " + err.Error()}
}

// judge turns a located path into a verdict against the spec.
func (c *artifactChecker) judge(ch ArtifactCheck, f found) ArtifactCheck {
	ch.Escapes = f.escapes
	if f.status != ArtifactValid {
		ch.Status, ch.Problem = f.status, f.problem
		return ch
	}
	ch.Matches = 1
	ch.Size = f.e.size
	ch.ModTime = f.e.mtime
	spec := ch.Spec
	switch kind := spec.EffectiveKind(); {
	case kind == state.ArtifactDir:
		if f.e.kind != kindDir {
			return ch.invalid("not a directory")
		}
	case f.e.kind == kindDir:
		return ch.invalid("is a directory, not a file")
	case f.e.kind != kindRegular:
		return ch.invalid("not a regular file")
	case ch.Size < spec.MinBytes:
		return ch.invalid(fmt.Sprintf("%d bytes < min %d", ch.Size, spec.MinBytes))
	}
	// The start is known only to within a second, and file times come from the
	// kernel's coarse clock, which lags.
	if spec.NewerThanStart && !c.start.IsZero() && ch.ModTime.Before(c.start.Add(-startTimeTolerance)) {
		return ch.invalid(fmt.Sprintf("modified %s, before the start %s", ch.ModTime.UTC().Format(time.RFC3339), c.start.UTC().Format(time.RFC3339)))
	}
	if spec.EffectiveKind() == state.ArtifactJSON {
		if problem := c.checkJSON(ch.Rel, &f.e); problem != "" {
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

var jsonTooLarge = fmt.Sprintf("larger than the %d MiB limit for JSON artifacts; not read", MaxJSONBytes>>20)

// checkJSON opens without blocking (a FIFO cannot hold the probe) and
// insists on the checked file's device and inode, so a swap is not judged.
func (c *artifactChecker) checkJSON(rel string, checked *fileEntry) string {
	if checked.size > MaxJSONBytes {
		return jsonTooLarge
	}
	f, err := c.fs.openRead(rel)
	if err != nil {
		if errors.Is(err, errEscapes) {
			return "changed while being checked (now leads outside the artifacts root); not read"
		}
		return "cannot be read: " + err.Error()
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "cannot be read: " + unwrapErrno(err).Error()
	}
	var now fileEntry
	fromFileInfo(fi, &now)
	if now.dev != checked.dev || now.ino != checked.ino || now.kind != kindRegular {
		return "changed while being checked; not read"
	}
	if now.size > MaxJSONBytes {
		return jsonTooLarge
	}
	// One byte more than the limit tells a file that grew past it.
	buf, err := io.ReadAll(io.LimitReader(f, MaxJSONBytes+1))
	if err != nil {
		return "cannot be read: " + unwrapErrno(err).Error()
	}
	if len(buf) > MaxJSONBytes {
		return jsonTooLarge
	}
	if !json.Valid(buf) {
		return "not valid JSON"
	}
	return ""
}

// glob matches through the root handle only, in name order per directory, so
// the verdict does not change with listing order.
func (c *artifactChecker) glob(ch ArtifactCheck, clean string) ArtifactCheck {
	comps := strings.Split(clean, "/")
	for _, comp := range comps {
		if _, err := filepath.Match(comp, ""); err != nil {
			return ch.invalid("bad glob pattern: " + err.Error())
		}
	}
	if !c.openRoot() {
		return c.judge(ch, c.rootFailure())
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
	c.walk(".", comps, visit)
	if c.stopped != "" {
		return ch
	}
	if matches == 0 || best.Status == 0 {
		// No match, or every match was missing by the time it was judged.
		ch.Status, ch.Problem = ArtifactMissing, "no file matches"
		return ch
	}
	best.Matches = matches
	return best
}

// walk calls visit for every final match of comps under rel; it reports
// whether to go on.
func (c *artifactChecker) walk(rel string, comps []string, visit func(string, found) bool) bool {
	if c.over() {
		return false
	}
	d, err := c.fs.openDir(rel)
	if err != nil {
		return true // gone, unreadable, or now leading out: matches nothing
	}
	defer d.close()
	comp, rest := comps[0], comps[1:]
	var names []string
	if strings.ContainsAny(comp, state.ArtifactGlobMeta) {
		err := d.names(func(name string) bool {
			if !c.visitEntry() {
				return false
			}
			if ok, _ := filepath.Match(comp, name); ok {
				names = append(names, name)
			}
			return true
		})
		if c.stopped != "" {
			return false
		}
		if err != nil {
			return true // an unreadable directory matches nothing
		}
		sort.Strings(names)
	} else {
		if !c.visitEntry() {
			return false
		}
		names = []string{comp}
	}
	for _, name := range names {
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		f := found{status: ArtifactValid}
		if err := d.lstat(name, &f.e); err != nil {
			continue // absent (or vanished since the listing): no match
		}
		if f.e.kind == kindSymlink {
			if err := c.fs.stat(childRel, &f.e); err != nil {
				f = lookupFailure(err, true)
				if f.status == ArtifactMissing {
					continue
				}
			}
		}
		if len(rest) == 0 || f.escapes {
			// A final match, or a symlinked directory leading out: report it, do not enter it.
			if !visit(childRel, f) {
				return false
			}
			continue
		}
		if f.status == ArtifactValid && f.e.kind == kindDir {
			if !c.walk(childRel, rest, visit) {
				return false
			}
		}
	}
	return c.stopped == ""
}

// visitEntry counts one directory entry against the bound, and looks at
// the clock every 64 entries. It reports whether the walk may go on.
func (c *artifactChecker) visitEntry() bool {
	c.entries++
	if c.entries > c.lim.entries {
		c.stopped = fmt.Sprintf("visited %d directory entries (limit %d)", c.lim.entries, c.lim.entries)
		return false
	}
	return c.entries%64 != 0 || !c.over()
}
