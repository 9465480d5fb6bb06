package wire

import "context"

type sessionWritesKey struct{}

// WithSessionWrites marks a page request whose own session cookie may triage.
func WithSessionWrites(ctx context.Context, ok bool) context.Context {
	return context.WithValue(ctx, sessionWritesKey{}, ok)
}

// SessionWrites is what WithSessionWrites said of ctx (false: nothing).
func SessionWrites(ctx context.Context) bool {
	v, _ := ctx.Value(sessionWritesKey{}).(bool)
	return v
}
