package wire

// TransitionResult is the answer to POST …/transitions: the entity after it
// and From, the lifecycle it left, without a racy read.
type TransitionResult struct {
	Entity
	From string `json:"from"`
}
