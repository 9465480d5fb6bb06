package wire

import "context"

type sessionWritesKey struct{}

// WithSessionWrites marks a page request whose own session (the cookie
// the API's POST /api/session set) may snooze and dismiss: the page then
// asks for no token before a write.
func WithSessionWrites(ctx context.Context, ok bool) context.Context {
	return context.WithValue(ctx, sessionWritesKey{}, ok)
}

// SessionWrites is what WithSessionWrites said of ctx (false: nothing).
func SessionWrites(ctx context.Context) bool {
	v, _ := ctx.Value(sessionWritesKey{}).(bool)
	return v
}
