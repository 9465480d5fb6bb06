package attention

import "watchdog/state"

// FillRunbook sets each item's RunbookURL and Do from of, which returns
// them for a reason code (docs.For over the configured runbook; ok false
// leaves both empty). Like FillHeartbeats it runs when the queue is read,
// over q's own items: the runbook's base can change on reload, and the
// live view's cached items are never changed. attention does not read
// the runbook itself, so the model's packages stay free of the
// documentation.
func (q *Queue) FillRunbook(of func(code state.ReasonCode) (url, do string, ok bool)) {
	for i := range q.Items {
		it := &q.Items[i]
		if url, do, ok := of(it.Reason.Code); ok {
			it.RunbookURL, it.Do = url, do
		}
	}
}
