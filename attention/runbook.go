package attention

import "watchdog/state"

// FillRunbook sets each item's RunbookURL and Do from of, at the read (the
// runbook's base can change on reload). attention never reads the runbook
// itself, so the model's packages stay free of the documentation.
func (q *Queue) FillRunbook(of func(code state.ReasonCode) (url, do string, ok bool)) {
	for i := range q.Items {
		it := &q.Items[i]
		if url, do, ok := of(it.Reason.Code); ok {
			it.RunbookURL, it.Do = url, do
		}
	}
}
