package probe

import (
	"os/user"
	"strconv"
	"sync"
	"time"
)

// Owner is whose rights an entity's files are examined with, so a principal
// learns nothing of a file it could not read itself (docs/security.md).
type Owner struct {
	UID   int
	Known bool
}

// Nobody is the group of a user the user database does not know.
const Nobody = 65534

// cred is a user's file-system identity: uid, primary gid and groups.
type cred struct {
	uid, gid int
	groups   []int
}

// credTTL bounds how long a user's groups are kept: a change in
// /etc/group is seen within it.
const credTTL = time.Minute

type credEntry struct {
	c   cred
	exp time.Time
}

var creds sync.Map // uid → credEntry

// credOf is o's file-system identity, from the user database, cached.
func credOf(o Owner) cred {
	uid := o.UID
	now := time.Now()
	if v, ok := creds.Load(uid); ok && now.Before(v.(credEntry).exp) {
		return v.(credEntry).c
	}
	c := cred{uid: uid, gid: Nobody}
	if uid == 0 {
		c.gid = 0
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if g, err := strconv.Atoi(u.Gid); err == nil {
			c.gid = g
		}
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if g, err := strconv.Atoi(id); err == nil && g != c.gid {
					c.groups = append(c.groups, g)
				}
			}
		}
	}
	creds.Store(uid, credEntry{c: c, exp: now.Add(credTTL)})
	return c
}

// AsOwner runs fn, which only opens, reads and stats, with o's file-system
// rights on a locked thread where it can (root), else its own (docs/security.md).
// ok is false when the switch was possible and failed: fn did not run.
func AsOwner(o Owner, fn func()) (ok bool) {
	if !o.Known {
		fn()
		return true
	}
	return asCred(credOf(o), fn)
}
