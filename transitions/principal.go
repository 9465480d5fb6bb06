package transitions

import (
	"errors"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"sync"

	"watchdog/store"
)

// Principal is who asks for a write, as the door it came through proved
// it (docs/security.md): a local socket's peer or the CLI on the store,
// whose uid the kernel names; a bearer token, which names the uids it may
// speak for; or the daemon's own jobs. The zero Principal is the
// daemon's own code and the tests: it may name any pid and act on any
// entity, and proves no uid.
type Principal struct {
	// Name is what the audit rows say: "uid:1000 (alice)", a token's
	// name, "reaper@host-13".
	Name string
	// UID is the caller's uid when Kernel: the kernel said so (a
	// socket's SO_PEERCRED, the CLI's own process).
	UID    int
	Kernel bool
	// UIDs are the uids a token may speak for; none: any pid, and no
	// uid proven (the administrator's reach, docs/security.md).
	UIDs []int
}

// PeerPrincipal is a caller the kernel names by uid; name is the user's
// name ("": looked up in the user database, once per uid).
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

// speaksFor says whether p may speak for uid.
func (p Principal) speaksFor(uid int) bool {
	if p.AnyUID() {
		return true
	}
	if p.Kernel {
		return uid == p.UID
	}
	return slices.Contains(p.UIDs, uid)
}

// MayActOn says whether p may heartbeat, transition or re-register e: the
// entity's proven owner is one p speaks for, or p speaks for every uid.
// An entity with no proven owner is only the latter's.
func (p Principal) MayActOn(e *store.Entity) bool {
	if p.AnyUID() {
		return true
	}
	return e.HasOwnerUID && p.speaksFor(e.OwnerUID)
}

// owner is the uid p proves for a registration whose pid (0: none) runs
// as pidUID (-1: unread): the pid's owner when p may speak for it (root,
// or a token with uids), else the kernel's uid, or a token's first uid
// without a pid. A token without uids proves none.
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

// PIDChecker proves who a local process runs as, for a registration that
// names it; probe.Host is one.
type PIDChecker interface {
	// CheckPID returns the real uid of the live process pid, started at
	// startTicks (0: whatever now runs as pid), or an error wrapping
	// ErrPIDRefused for a process that may never be an entity's (pid 1,
	// a kernel thread, the daemon and its ancestors) or ErrPIDGone.
	CheckPID(pid int, startTicks uint64) (uid int, err error)
}

// ErrPIDRefused and ErrPIDGone are CheckPID's refusals.
var (
	ErrPIDRefused = errors.New("pid refused")
	ErrPIDGone    = errors.New("no such process")
)

// forbidActOn is the refusal of a write on someone else's entity.
func forbidActOn(p Principal, e *store.Entity) error {
	owner := "no proven owner"
	if e.HasOwnerUID {
		owner = "uid " + strconv.Itoa(e.OwnerUID)
	}
	return fmt.Errorf("%w: %s/%s belongs to %s, not to %s: only its owner (or root, or a token that speaks for its uid) may change it", ErrForbidden, e.Type, e.ID, owner, p.Name)
}

// OwnersAgree says whether child's registrant could have acted on
// parent: the reconcilers let a child change its parent (a failed
// critical-path play fails its show), or a parent its children, only
// then, so that no user's entity moves another's through a parent link
// named before the parent existed (docs/security.md).
func OwnersAgree(child, parent *store.Entity) bool {
	if !child.HasOwnerUID || child.OwnerUID == 0 {
		return true // the administrator's reach, or root's
	}
	return parent.HasOwnerUID && parent.OwnerUID == child.OwnerUID
}
