package live

import (
	"watchdog/state"
	"watchdog/store"
)

// maxInterned bounds each interner: the words are few, so a store whose
// words outgrow it keeps the rest as decoded instead of growing the table.
const maxInterned = 4096

// interner keeps one copy of each repeated word of the entities the view
// holds, as the store decodes every row's strings afresh. Only apply uses
// it, under syncMu: it needs no lock of its own.
type interner struct {
	words      map[string]string
	lifecycles map[string]*string
	// texts are the reasons' messages and evidence details, kept apart so
	// the one-off ones do not fill words'.
	texts map[string]string
}

func newInterner() interner {
	return interner{words: map[string]string{}, lifecycles: map[string]*string{}, texts: map[string]string{}}
}

func (in *interner) text(s string) string {
	if s == "" {
		return ""
	}
	if w, ok := in.texts[s]; ok {
		return w
	}
	if len(in.texts) >= maxInterned {
		return s
	}
	in.texts[s] = s
	return s
}

func (in *interner) word(s string) string {
	if s == "" {
		return ""
	}
	if w, ok := in.words[s]; ok {
		return w
	}
	if len(in.words) >= maxInterned {
		return s
	}
	in.words[s] = s
	return s
}

// lifecycle is l's one copy, pointer and all: entries are never changed
// in place, so entities may share it.
func (in *interner) lifecycle(l *string) *string {
	if l == nil {
		return nil
	}
	if p, ok := in.lifecycles[*l]; ok {
		return p
	}
	if len(in.lifecycles) >= maxInterned {
		return l
	}
	p := new(string)
	*p = in.word(*l)
	in.lifecycles[*l] = p
	return p
}

// entity interns e's repeated words in place (e is the view's own copy).
func (in *interner) entity(e *store.Entity) {
	e.Type = in.word(e.Type)
	e.Lifecycle = in.lifecycle(e.Lifecycle)
	e.Health = state.Health(in.word(string(e.Health)))
	e.Delivery = state.Delivery(in.word(string(e.Delivery)))
	e.HostID = in.word(e.HostID)
	e.BootID = in.word(e.BootID)
	e.ParentType = in.word(e.ParentType)
	if e.TransitionReason != nil {
		in.reason(e.TransitionReason, e.ID)
	}
	for i := range e.Reasons {
		in.reason(&e.Reasons[i], e.ID)
	}
}

// reason interns a reason's words and texts; an entity id equal to id
// becomes that very string.
func (in *interner) reason(r *state.StateReason, id string) {
	r.Code = state.ReasonCode(in.word(string(r.Code)))
	r.Message = in.text(r.Message)
	r.ClaimStatus = in.word(r.ClaimStatus)
	r.EntityType = in.word(r.EntityType)
	if r.EntityID == id {
		r.EntityID = id
	}
	for i := range r.Evidence {
		r.Evidence[i].Kind = in.word(r.Evidence[i].Kind)
		r.Evidence[i].Detail = in.text(r.Evidence[i].Detail)
	}
}
