package live

import "sync"

// MaxChangedKeys is how many changed entities a Subscription keeps between
// two Takes; past it the Changes say More and a reader re-reads all.
const MaxChangedKeys = 100

// Changes are what changed in the view since a subscriber last took them.
type Changes struct {
	// Entities are the changed entities as "type/id", each once, in order.
	Entities []string
	// More says more entities changed than Entities lists.
	More bool
	// Dismissals says a snooze or dismissal changed: the queue may read
	// differently though no entity changed.
	Dismissals bool
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Entities) == 0 && !c.More && !c.Dismissals }

// Subscription wakes its reader after the view applied changes (a burst is
// one wake) and Take says what changed. It never blocks the view's writer.
type Subscription struct {
	v *View
	c chan struct{}

	mu      sync.Mutex
	changes Changes
	seen    map[string]struct{}
}

// C receives after changes were applied since the last Take.
func (s *Subscription) C() <-chan struct{} { return s.c }

// Take returns what changed since the last Take and starts afresh.
func (s *Subscription) Take() Changes {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.changes
	s.changes = Changes{}
	clear(s.seen)
	return c
}

// Close ends the subscription: C receives no more.
func (s *Subscription) Close() {
	s.v.subMu.Lock()
	delete(s.v.subs, s)
	s.v.subMu.Unlock()
}

func (s *Subscription) note(keys []string, dismissals bool) {
	s.mu.Lock()
	for _, k := range keys {
		if s.changes.More {
			break
		}
		if _, dup := s.seen[k]; dup {
			continue
		}
		if len(s.changes.Entities) == MaxChangedKeys {
			s.changes.More = true
			break
		}
		s.seen[k] = struct{}{}
		s.changes.Entities = append(s.changes.Entities, k)
	}
	s.changes.Dismissals = s.changes.Dismissals || dismissals
	s.mu.Unlock()
	select {
	case s.c <- struct{}{}:
	default: // a wake is pending already: it covers this change too
	}
}

// Subscribe starts a subscription to the view's changes; Close ends it.
func (v *View) Subscribe() *Subscription {
	s := &Subscription{v: v, c: make(chan struct{}, 1), seen: map[string]struct{}{}}
	v.subMu.Lock()
	if v.subs == nil {
		v.subs = map[*Subscription]struct{}{}
	}
	v.subs[s] = struct{}{}
	v.subMu.Unlock()
	return s
}

// Subscribers is how many subscriptions are open.
func (v *View) Subscribers() int {
	v.subMu.Lock()
	defer v.subMu.Unlock()
	return len(v.subs)
}

func (v *View) publish(keys []string, dismissals bool) {
	if len(keys) == 0 && !dismissals {
		return
	}
	v.subMu.Lock()
	subs := make([]*Subscription, 0, len(v.subs))
	for s := range v.subs {
		subs = append(subs, s)
	}
	v.subMu.Unlock()
	for _, s := range subs {
		s.note(keys, dismissals)
	}
}
