package transitions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"watchdog/internal/cronspec"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/store"
)

// Identifier reads this host's identity and a process's start; probe.Host is one.
type Identifier interface {
	HostID() string
	BootID() (string, error)
	// StartOf is a live local process's start time and clock ticks since boot.
	StartOf(pid int) (startTime time.Time, startTicks uint64, err error)
}

var idShape = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,255}$`)

// ValidateID checks an entity id's shape: 1 to 256 (wire.MaxID) of
// letters, digits and ._:@+- not starting with punctuation.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: id is required", ErrInvalidInput)
	}
	if !idShape.MatchString(id) {
		return fmt.Errorf("%w: id %q must be 1-256 characters of letters, digits and . _ : @ + - (starting with a letter or digit)", ErrInvalidInput, id)
	}
	return nil
}

// Registration is a register/upsert request.
type Registration struct {
	Entity store.Entity
	// Legacy registers an entity with a NULL lifecycle (Entity.Lifecycle nil).
	Legacy bool
	Actor  string
	// Principal is who registers; it must speak for the pid's owner (docs/security.md).
	Principal Principal
}

// CheckRegistration runs Register's checks without the store, so a bad
// document is refused before a database is opened.
func CheckRegistration(reg Registration) error {
	_, _, err := prepare(reg)
	return err
}

// prepare validates a registration, returning its canonical entity and graph.
func prepare(reg Registration) (store.Entity, *Graph, error) {
	e := reg.Entity
	g, err := Lookup(e.Type)
	if err != nil {
		return e, nil, err
	}
	e.Type = g.Type
	if err := ValidateID(e.ID); err != nil {
		return e, nil, err
	}
	if !contains(Actors, reg.Actor) {
		return e, nil, fmt.Errorf("%w: actor %q is not one of %s", ErrInvalidInput, reg.Actor, strings.Join(Actors, ", "))
	}
	switch {
	case reg.Legacy:
		if e.Lifecycle != nil {
			return e, nil, fmt.Errorf("%w: a legacy entity has no lifecycle", ErrInvalidInput)
		}
	case e.Lifecycle == nil:
		l := g.Initial
		e.Lifecycle = &l
	case !g.HasState(*e.Lifecycle):
		return e, nil, fmt.Errorf("lifecycle: %w %q for %s (states: %s)", ErrUnknownState, *e.Lifecycle, g.Type, strings.Join(g.States, ", "))
	}
	if err := validateFields(&e); err != nil {
		return e, nil, err
	}
	return e, g, nil
}

// Register validates and upserts an entity and reports whether it was
// created. An existing entity keeps its lifecycle: only Transition moves it.
func (w *Writer) Register(ctx context.Context, reg Registration) (bool, error) {
	e, g, err := prepare(reg)
	if err != nil {
		return false, err
	}
	// A re-registration keeps the host unless it names one: claiming the kept
	// pid for this host would probe (maybe end) an unrelated local process.
	cur, err := w.Store.Get(ctx, e.Type, e.ID)
	exists := err == nil
	if exists && !reg.Principal.MayActOn(&cur) {
		return false, forbidActOn(reg.Principal, &cur)
	}
	// A parent moves with its children: only one's own may be named.
	if e.ParentID != "" && !reg.Principal.AnyUID() {
		parent, err := w.Store.Get(ctx, e.ParentType, e.ParentID)
		switch {
		case err == nil && !reg.Principal.MayActOn(&parent):
			return false, fmt.Errorf("%w: parent %s/%s is another user's; %s may name only its own", ErrForbidden, e.ParentType, e.ParentID, reg.Principal.Name)
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return false, fmt.Errorf("register %s/%s: read parent: %w", e.Type, e.ID, err)
		}
	}
	switch {
	case exists:
		if e.HostID == "" {
			e.HostID = cur.HostID
		} else if e.HostID != cur.HostID && cur.PID > 0 && e.PID == 0 {
			return false, fmt.Errorf("%w: host_id changes from %q to %q: give the pid on the new host too", ErrInvalidInput, cur.HostID, e.HostID)
		}
	case !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("register %s/%s: %w", e.Type, e.ID, err)
	}
	at := w.now()
	if e.Lifecycle != nil {
		e.Terminal = g.IsTerminal(*e.Lifecycle)
		if e.Terminal {
			e.EndedAt = at
		}
		// New started work ages from now; restarting an upsert's clock would hide a stall.
		if !exists && e.StartedAt.IsZero() && g.Started(*e.Lifecycle) {
			e.StartedAt = at
		}
	}
	if len(e.Artifacts) == 0 {
		e.Delivery = state.DeliveryNotExpected
	} else {
		e.Delivery = state.DeliveryUnknown
	}
	e.Health = state.HealthUnknown
	w.fillIdentity(&e)
	if err := w.claim(&e, reg.Principal); err != nil {
		return false, err
	}
	if exists {
		// Upserts keep the owner.
		e.Owner, e.OwnerUID, e.HasOwnerUID = cur.Owner, cur.OwnerUID, cur.HasOwnerUID
	}
	// Checked again in the write's transaction: another user may register the
	// same id in between.
	e.OwnerGuard = !reg.Principal.AnyUID()
	created, err := w.Store.Register(ctx, e, reg.Actor, at)
	if errors.Is(err, store.ErrNotOwner) {
		return false, fmt.Errorf("%w: %s/%s was just registered by another user", ErrForbidden, e.Type, e.ID)
	}
	return created, err
}

// claim proves p's right to the pid e names and records p as e's owner:
// the pid must be this host's, alive, claimable and owned by a uid p speaks
// for; start ticks are rechecked with the owner, so a reused pid fails.
func (w *Writer) claim(e *store.Entity, p Principal) error {
	e.Owner = p.Name
	if w.Ident != nil && e.HostID != "" && e.HostID != w.Ident.HostID() && !p.AnyUID() {
		// A uid proven here means nothing on another host.
		return fmt.Errorf("%w: host %s is not this one: %s may register only this host's entities", ErrForbidden, e.HostID, p.Name)
	}
	pidUID := -1
	if e.PID > 0 && w.PIDs != nil {
		local := w.Ident == nil || e.HostID == w.Ident.HostID()
		switch uid, err := w.PIDs.CheckPID(e.PID, e.PIDStartTicks); {
		case !local:
			if !p.AnyUID() {
				return fmt.Errorf("%w: pid %d is on host %s, where this daemon cannot prove whose it is", ErrPIDRefused, e.PID, e.HostID)
			}
		case errors.Is(err, ErrPIDRefused):
			return err
		case err != nil:
			if !p.AnyUID() {
				return fmt.Errorf("%w: pid %d: %w", ErrPIDRefused, e.PID, err)
			}
		case !p.speaksFor(uid):
			return fmt.Errorf("%w: pid %d runs as uid %d, not one %s may speak for: register one of your own processes, or ask root (or a token whose uids name %d) to register it", ErrForbidden, e.PID, uid, p.Name, uid)
		default:
			pidUID = uid
		}
	}
	e.OwnerUID, e.HasOwnerUID = p.owner(e.PID, pidUID)
	if e.HasOwnerUID && e.OwnerUID < 0 {
		e.OwnerUID, e.HasOwnerUID = 0, false // a pid whose owner could not be read proves none
	}
	return nil
}

// fillIdentity claims a host-less entity naming this host's things
// (HostBound) and completes a local pid's identity.
func (w *Writer) fillIdentity(e *store.Entity) {
	if w.Ident == nil {
		return
	}
	local := w.Ident.HostID()
	if e.HostID == "" && HostBound(*e) {
		e.HostID = local
	}
	if e.PID <= 0 || e.HostID != local {
		return
	}
	if e.BootID == "" {
		if b, err := w.Ident.BootID(); err == nil {
			e.BootID = b
		}
	}
	if e.PIDStartTime.IsZero() {
		if st, ticks, err := w.Ident.StartOf(e.PID); err == nil {
			e.PIDStartTime, e.PIDStartTicks = st, ticks
		}
	}
	// A reused supervisor pid must not pass for it (that would hide an orphan).
	if e.SupervisorPID > 0 && e.SupervisorStartTime.IsZero() {
		if st, _, err := w.Ident.StartOf(e.SupervisorPID); err == nil {
			e.SupervisorStartTime = st
		}
	}
}

// HostBound says whether an entity registered without a host_id belongs to
// the registering host; host-less ones are the fleet leader's (docs/fleet.md).
func HostBound(e store.Entity) bool {
	if g, ok := graphs[e.Type]; !ok || !g.Hostless {
		return true
	}
	return e.PID > 0 || e.SupervisorPID > 0 || e.HeartbeatFile != "" || e.ArtifactsRoot != "" ||
		len(e.Artifacts) > 0 || len(e.LockFiles) > 0
}

func validateFields(e *store.Entity) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, args...)...)
	}
	if len(e.Label) > 1000 {
		return bad("label is longer than 1000 characters")
	}
	if err := CheckText("label", e.Label); err != nil {
		return err
	}
	if err := validateNumbers(e); err != nil {
		return err
	}
	for i, a := range e.Artifacts {
		if err := a.Validate(); err != nil {
			return bad("artifacts[%d]: %v", i, err)
		}
	}
	if len(e.Artifacts) > 0 && e.ArtifactsRoot == "" {
		return bad("artifacts need an artifacts_root")
	}
	// Relative to what? The daemon's working directory is no caller's.
	for _, f := range []struct{ name, path string }{{"heartbeat_file", e.HeartbeatFile}, {"artifacts_root", e.ArtifactsRoot}} {
		if f.path != "" && !filepath.IsAbs(f.path) {
			return bad("%s %q must be an absolute path", f.name, f.path)
		}
	}
	if err := validateContractLimits(e.Artifacts); err != nil {
		return err
	}
	for i, l := range e.LockFiles {
		if strings.TrimSpace(l) == "" || strings.ContainsAny(l, "*?[") {
			return bad("lock_files[%d] %q must be one declared path, not empty or a pattern", i, l)
		}
	}
	if e.ParentType != "" || e.ParentID != "" {
		pt, ok := CanonicalType(e.ParentType)
		if !ok {
			return bad("parent.type %q is not an entity type (known: %s)", e.ParentType, strings.Join(Types(), ", "))
		}
		e.ParentType = pt
		if err := ValidateID(e.ParentID); err != nil {
			return fmt.Errorf("parent.id: %w", err)
		}
		if pt == e.Type && e.ParentID == e.ID {
			return bad("parent %s/%s is the entity itself", pt, e.ParentID)
		}
	}
	for i, d := range e.DependsOn {
		if err := ValidateID(d); err != nil {
			return fmt.Errorf("depends_on[%d]: %w", i, err)
		}
	}
	if e.ScheduleCron != "" {
		if _, err := cronspec.Parser.Parse(e.ScheduleCron); err != nil {
			return bad("schedule.cron %q is not a cron spec: %v", e.ScheduleCron, err)
		}
	}
	if e.Type == "schedule" && e.ScheduleCron == "" && !e.ScheduleLastFiredAt.IsZero() {
		return bad("schedule.last_fired_at given without schedule.cron")
	}
	return nil
}

// CheckText refuses a label or note that is not valid UTF-8 or holds a
// control character, which would act on a terminal or page; never altered.
func CheckText(field, s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return fmt.Errorf("%w: %s is not valid UTF-8 (at byte %d)", ErrInvalidInput, field, i)
			}
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Errorf("%w: %s holds the control character U+%04X (at byte %d): labels and notes are plain text", ErrInvalidInput, field, r, i)
		}
	}
	return nil
}

// validateContractLimits refuses an artifact contract the probe would not
// check in full: it would read delivery unknown forever.
func validateContractLimits(specs []state.ArtifactSpec) error {
	if err := state.ValidateContract(specs); err != nil {
		return fmt.Errorf("%w: artifact contract: %v", ErrOverLimit, err)
	}
	return nil
}

// validateNumbers is the write path's floor for a registration built in the program.
func validateNumbers(e *store.Entity) error {
	for _, f := range []struct {
		name string
		v    int64
		r    Range
	}{
		{"pid", int64(e.PID), PIDRange()},
		{"supervisor_pid", int64(e.SupervisorPID), PIDRange()},
	} {
		if err := f.r.Check(f.name, strconv.FormatInt(f.v, 10), float64(f.v)); err != nil {
			return err
		}
	}
	if err := TimeoutRange().Check("timeout_seconds", seconds(e.Timeout.Seconds()), e.Timeout.Seconds()); err != nil {
		return err
	}
	for i, a := range e.Artifacts {
		if err := BytesRange().Check(fmt.Sprintf("artifacts[%d].min_bytes", i), strconv.FormatInt(a.MinBytes, 10), float64(a.MinBytes)); err != nil {
			return err
		}
	}
	stored := Range{Min: 0, Max: unixtime.MaxSeconds, Unit: "Unix seconds"}
	for _, f := range []struct {
		name string
		t    time.Time
	}{
		{"pid_start_time", e.PIDStartTime},
		{"supervisor_start_time", e.SupervisorStartTime},
		{"schedule.last_fired_at", e.ScheduleLastFiredAt},
	} {
		s := unixtime.Seconds(f.t)
		if err := stored.Check(f.name, seconds(s), s); err != nil {
			return err
		}
	}
	return nil
}

// seconds formats a number of seconds the program holds, for an error.
func seconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) }
