package transitions

import (
	"cmp"
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"sync"

	"watchdog/store"
)

// Principal is who asks for a write, as its door proved it
// (docs/security.md): a uid the kernel names, a token naming the uids it
// speaks for, or the daemon's jobs. The zero Principal (the daemon's own
// code, tests) may name any pid and act on any entity, and proves no uid.
type Principal struct {
	// Name is what the audit rows say: "uid:1000 (alice)", a token's name.
	Name string
	// UID is the caller's uid when Kernel: the kernel said so.
	UID    int
	Kernel bool
	// UIDs are the uids a token may speak for; none: any pid, no uid proven.
	UIDs []int
}

// PeerPrincipal is a caller the kernel names by uid; name "" is looked up
// once per uid.
func PeerPrincipal(uid int, name string) Principal {
	if name == "" {
		name = userName(uid)
	}
	n := "uid:" + strconv.Itoa(uid)
	if name != "" {
		n += " (" + name + ")"
	}
	return Principal{Name: n, UID: uid, Kernel: true}
}

// userNames caches uid → user name ("" for a uid with none).
var userNames sync.Map

func userName(uid int) string {
	if n, ok := userNames.Load(uid); ok {
		return n.(string)
	}
	name := ""
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = u.Username
	}
	userNames.Store(uid, name)
	return name
}

// AnyUID says whether p may speak for every uid: root by the kernel, a
// token naming uid 0, or a principal that names no uid at all.
func (p Principal) AnyUID() bool {
	if p.Kernel {
		return p.UID == 0
	}
	return len(p.UIDs) == 0 || slices.Contains(p.UIDs, 0)
}

func (p Principal) speaksFor(uid int) bool {
	if p.AnyUID() {
		return true
	}
	if p.Kernel {
		return uid == p.UID
	}
	return slices.Contains(p.UIDs, uid)
}

// MayActOn says whether p may heartbeat, transition or re-register e: p
// speaks for its proven owner or every uid (only the latter if unproven).
func (p Principal) MayActOn(e *store.Entity) bool {
	if p.AnyUID() {
		return true
	}
	return e.HasOwnerUID && p.speaksFor(e.OwnerUID)
}

// ActorFor decides which actor a door's caller asks as: claimed, else dflt,
// else orchestrator. admin is the admin right the door proved (API scope,
// root by the kernel); without it a default admin is orchestrator and a claim
// refused. reaper's rows are the daemon's jobs' alone; unknown, the write path's.
func ActorFor(claimed, dflt string, p Principal, admin bool) (string, error) {
	switch actor := cmp.Or(claimed, dflt, ActorOrchestrator); {
	case actor == ActorReaper:
		return "", fmt.Errorf("%w: actor reaper is reserved for the daemon's own jobs", ErrForbidden)
	case actor != ActorAdmin || admin:
		return actor, nil
	case claimed == "":
		return ActorOrchestrator, nil
	}
	return "", fmt.Errorf("%w: actor admin needs the admin scope (an admin token, or root on the socket or the database), which %s does not have: ask as orchestrator", ErrForbidden, p.Name)
}

// owner is the uid p proves for a registration whose pid (0: none) runs as
// pidUID (-1: unread); a token without uids proves none.
func (p Principal) owner(pid, pidUID int) (int, bool) {
	switch {
	case p.Kernel && p.UID == 0 && pid > 0 && pidUID >= 0:
		return pidUID, true
	case p.Kernel:
		return p.UID, true
	case len(p.UIDs) == 0:
		return 0, false
	case pid > 0:
		return pidUID, true
	}
	return p.UIDs[0], true
}

// PIDChecker proves who a local process runs as; probe.Host is one.
type PIDChecker interface {
	// CheckPID returns the real uid of live pid started at startTicks (0: any
	// start), ErrPIDRefused for a pid no entity may have, or ErrPIDGone.
	CheckPID(pid int, startTicks uint64) (uid int, err error)
}

// ErrPIDRefused and ErrPIDGone are CheckPID's refusals.
var (
	ErrPIDRefused = errors.New("pid refused")
	ErrPIDGone    = errors.New("no such process")
)

func forbidActOn(p Principal, e *store.Entity) error {
	owner := "no proven owner"
	if e.HasOwnerUID {
		owner = "uid " + strconv.Itoa(e.OwnerUID)
	}
	return fmt.Errorf("%w: %s/%s belongs to %s, not to %s: only its owner (or root, or a token that speaks for its uid) may change it", ErrForbidden, e.Type, e.ID, owner, p.Name)
}

// OwnersAgree says whether child's registrant could have acted on parent:
// only then may reconcilers move one by the other, so no user's entity
// moves another's through a parent link (docs/security.md).
func OwnersAgree(child, parent *store.Entity) bool {
	if !child.HasOwnerUID || child.OwnerUID == 0 {
		return true // the administrator's reach, or root's
	}
	return parent.HasOwnerUID && parent.OwnerUID == child.OwnerUID
}
