package wire

// TransitionResult is the answer to POST …/{type}/{id}/transitions: the
// entity as it is after the transition, and From, the lifecycle it left,
// so a caller can say "FROM -> TO" without a read that races with other
// writers.
type TransitionResult struct {
	Entity
	From string `json:"from"`
}
