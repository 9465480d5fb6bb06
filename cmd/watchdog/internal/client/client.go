// Package client calls a watchdog daemon's HTTP API for the CLI. Errors
// come back as the write path's sentinels (errors.Is) with the server's
// own sentence, so a command prints the same line either way.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"watchdog/attention"
	"watchdog/transitions"
	"watchdog/wire"
)

// DefaultTimeout bounds one request, connection to last byte: well past
// the store's busy timeout a daemon's write waits for.
const DefaultTimeout = 30 * time.Second

// ErrUnauthorized is returned for a 401: no token, or the wrong one.
var ErrUnauthorized = errors.New("unauthorized: check WATCHDOG_TOKEN_FILE")

// ErrServer is returned for a response the API does not document.
var ErrServer = errors.New("server error")

// Client talks to one watchdog daemon. It is safe for concurrent use.
type Client struct {
	base  string
	token string
	// HTTP is the underlying client; New sets a DefaultTimeout.
	HTTP *http.Client
	// UnauthorizedHint, when set, is added to a 401's message: where the token came from.
	UnauthorizedHint string
	// listPage and rowsPage are the page sizes asked for (0: the API's largest).
	listPage, rowsPage int
	// unix: the daemon's local socket (NewUnix).
	unix bool
}

// New returns a client of the daemon at baseURL (a bare host:port gets
// http://); token, when not empty, is sent as a bearer token.
func New(baseURL, token string) *Client {
	base := strings.TrimRight(strings.TrimSpace(baseURL), "/")
	if base != "" && !strings.Contains(base, "://") {
		base = "http://" + base
	}
	return &Client{base: base, token: token, HTTP: &http.Client{Timeout: DefaultTimeout}}
}

// NewUnix returns a client of the daemon's local socket at path: no token,
// the kernel tells the daemon who calls (docs/security.md).
func NewUnix(path string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}
	// localhost: a name the daemon's Host guard accepts.
	return &Client{base: "http://localhost", HTTP: &http.Client{Timeout: DefaultTimeout, Transport: tr}, unix: true}
}

// Unix says the client talks to the local socket.
func (c *Client) Unix() bool { return c.unix }

// HasToken reports whether the client sends a bearer token.
func (c *Client) HasToken() bool { return c.token != "" }

// Error is an error response of the API.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Cause is the API's machine-readable cause, "" if the body had none.
	Cause string
	// Message is the server's sentence.
	Message  string
	sentinel error
}

// Error returns the server's message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel the status and cause map to.
func (e *Error) Unwrap() error { return e.sentinel }

// causeSentinels maps the API's causes back to the write path's errors.
var causeSentinels = map[string]error{
	transitions.CauseNotFound:          transitions.ErrNotFound,
	transitions.CauseConflict:          transitions.ErrConflict,
	transitions.CauseInvalidTransition: transitions.ErrInvalidTransition,
	transitions.CauseUnknownReason:     transitions.ErrUnknownReason,
	transitions.CauseReasonRequired:    transitions.ErrReasonRequired,
	transitions.CauseForbidden:         transitions.ErrForbidden,
	transitions.CauseUnknownType:       transitions.ErrUnknownType,
	transitions.CauseUnknownState:      transitions.ErrUnknownState,
	transitions.CauseInvalidInput:      transitions.ErrInvalidInput,
	transitions.CauseOverLimit:         transitions.ErrOverLimit,
	transitions.CausePIDRefused:        transitions.ErrPIDRefused,
	"bad_request":                      wire.ErrBadInput,
	"too_large":                        wire.ErrTooLarge,
	"unauthorized":                     ErrUnauthorized,
}

// statusSentinels is the fallback for a body without a known cause.
var statusSentinels = map[int]error{
	http.StatusBadRequest:            wire.ErrBadInput,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusForbidden:             transitions.ErrForbidden,
	http.StatusNotFound:              transitions.ErrNotFound,
	http.StatusConflict:              transitions.ErrConflict,
	http.StatusRequestEntityTooLarge: wire.ErrTooLarge,
	http.StatusUnprocessableEntity:   transitions.ErrInvalidTransition,
}

// Register registers (or updates) an entity and reports whether it was created.
func (c *Client) Register(ctx context.Context, r wire.Register) (wire.Entity, bool, error) {
	var e wire.Entity
	status, err := c.do(ctx, http.MethodPost, "/api/v1/entities", r, &e)
	if err != nil {
		return wire.Entity{}, false, err
	}
	return e, status == http.StatusCreated, nil
}

// Heartbeat records a heartbeat with an optional progress note.
func (c *Client) Heartbeat(ctx context.Context, typ, id, progress string) error {
	var body any
	if progress != "" {
		body = wire.Heartbeat{Progress: progress}
	}
	_, err := c.do(ctx, http.MethodPost, entityPath(typ, id)+"/heartbeat", body, nil)
	return err
}

// Transition asks for a lifecycle change and returns its result.
func (c *Client) Transition(ctx context.Context, typ, id string, t wire.Transition) (wire.TransitionResult, error) {
	var res wire.TransitionResult
	if _, err := c.do(ctx, http.MethodPost, entityPath(typ, id)+"/transitions", t, &res); err != nil {
		return wire.TransitionResult{}, err
	}
	return res, nil
}

// Entity reads one entity with its audit rows.
func (c *Client) Entity(ctx context.Context, typ, id string) (wire.Entity, error) {
	var e wire.Entity
	if _, err := c.do(ctx, http.MethodGet, entityPath(typ, id), nil, &e); err != nil {
		return wire.Entity{}, err
	}
	return e, nil
}

func entityPath(typ, id string) string {
	return "/api/v1/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)
}

// do sends one request and decodes a 2xx body into out (if not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	if c.base == "" {
		return 0, errors.New("no server URL (set --server or WATCHDOG_SERVER)")
	}
	u := c.base + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode request: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, fmt.Errorf("server %s: %w", c.base, err)
	}
	if body != nil || method == http.MethodPost {
		// The API refuses a POST not saying JSON, even an empty one.
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("server %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	// Cap what a misbehaving server can send.
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("server %s: read response: %w", c.base, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := responseError(resp.StatusCode, data)
		var e *Error
		if resp.StatusCode == http.StatusUnauthorized && c.UnauthorizedHint != "" && errors.As(err, &e) {
			e.Message += "; " + c.UnauthorizedHint
		}
		return resp.StatusCode, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("server %s: %s %s: decode response: %w", c.base, method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// responseError turns an error response into an *Error with its sentinel.
func responseError(status int, data []byte) error {
	var body struct {
		Error string `json:"error"`
		Cause string `json:"cause"`
	}
	_ = json.Unmarshal(data, &body) // a non-JSON body falls back to the status
	e := &Error{Status: status, Cause: body.Cause, Message: body.Error}
	if s, ok := causeSentinels[body.Cause]; ok {
		e.sentinel = s
	} else if s, ok := statusSentinels[status]; ok {
		e.sentinel = s
	} else {
		e.sentinel = ErrServer
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("%s: HTTP %d %s", e.sentinel, status, http.StatusText(status))
	}
	if status == http.StatusUnauthorized {
		// The fix for a 401 is on this side.
		e.Message = ErrUnauthorized.Error() + " (server said: " + strings.TrimSuffix(body.Error, ".") + ")"
		if body.Error == "" {
			e.Message = ErrUnauthorized.Error()
		}
	}
	return e
}

// List reads every entity f selects, following the daemon's pages in id
// order, in which an entity that exists throughout is returned exactly
// once. No audit rows; with process, the daemon's process facts.
func (c *Client) List(ctx context.Context, f wire.EntityFilter, process bool) (wire.EntityList, error) {
	v := url.Values{}
	if process {
		v.Set("process", "true")
	}
	if f.Type != "" {
		v.Set("type", f.Type)
	}
	if len(f.Severities) > 0 {
		s := make([]string, len(f.Severities))
		for i, sev := range f.Severities {
			s[i] = string(sev)
		}
		v.Set("severity", strings.Join(s, ","))
	}
	if f.Host != "" {
		v.Set("host", f.Host)
	}
	v.Set("order", "id")
	v.Set("limit", strconv.Itoa(cmp.Or(c.listPage, wire.MaxEntitiesPage)))
	var out wire.EntityList
	for first := true; first || out.Next != ""; first = false {
		if !first {
			v.Set("after", out.Next)
		}
		var pg wire.EntityList
		if _, err := c.do(ctx, http.MethodGet, "/api/v1/entities?"+v.Encode(), nil, &pg); err != nil {
			return wire.EntityList{}, err
		}
		if first {
			out.GeneratedAt = pg.GeneratedAt
		}
		out.Items = append(out.Items, pg.Items...)
		out.Next = pg.Next
	}
	out.Total = len(out.Items)
	if out.Items == nil {
		out.Items = []wire.Entity{}
	}
	return out, nil
}

// Transitions reads an entity's whole history, oldest first.
func (c *Client) Transitions(ctx context.Context, typ, id string) ([]wire.AuditRow, error) {
	rows := []wire.AuditRow{}
	var after int64
	for {
		var pg wire.TransitionPage
		path := fmt.Sprintf("%s/transitions?after=%d&limit=%d", entityPath(typ, id), after, cmp.Or(c.rowsPage, wire.MaxTransitionsPage))
		if _, err := c.do(ctx, http.MethodGet, path, nil, &pg); err != nil {
			return nil, err
		}
		rows = append(rows, pg.Items...)
		if pg.NextAfter == 0 {
			return rows, nil
		}
		after = pg.NextAfter
	}
}

// Attention reads the daemon's queue under its own failure window.
func (c *Client) Attention(ctx context.Context, q attention.Query) (attention.Queue, error) {
	v := url.Values{}
	if len(q.Severities) > 0 {
		s := make([]string, len(q.Severities))
		for i, sev := range q.Severities {
			s[i] = string(sev)
		}
		v.Set("severity", strings.Join(s, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.IncludeDismissed {
		v.Set("include_dismissed", "true")
	}
	if q.Host != "" {
		v.Set("host", q.Host)
	}
	path := "/api/attention"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var out attention.Queue
	if _, err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return attention.Queue{}, err
	}
	return out, nil
}

// Snooze hides the attention item fp until the moment given, or until its
// entity's status changes; an unknown fp is transitions.ErrNotFound.
func (c *Client) Snooze(ctx context.Context, fp string, until time.Time) error {
	body := map[string]any{"fingerprint": fp, "until": float64(until.UnixMilli()) / 1e3}
	_, err := c.do(ctx, http.MethodPost, attention.SnoozePath, body, nil)
	return err
}

// Triage snoozes (until set) or dismisses fps, or cluster's items: all or
// none. It returns the fingerprints written.
func (c *Client) Triage(ctx context.Context, fps []string, cluster string, until time.Time) ([]string, error) {
	body := map[string]any{}
	if cluster != "" {
		body["cluster"] = cluster
	} else {
		body["fingerprints"] = fps
	}
	path := attention.DismissPath
	if !until.IsZero() {
		body["until"] = float64(until.UnixMilli()) / 1e3
		path = attention.SnoozePath
	}
	var out struct {
		Dismissals []struct {
			Fingerprint string `json:"fingerprint"`
		} `json:"dismissals"`
	}
	if _, err := c.do(ctx, http.MethodPost, path, body, &out); err != nil {
		return nil, err
	}
	done := make([]string, len(out.Dismissals))
	for i, d := range out.Dismissals {
		done[i] = d.Fingerprint
	}
	return done, nil
}

// Dismiss hides the attention item fp until its entity's status changes;
// an unknown fp is transitions.ErrNotFound.
func (c *Client) Dismiss(ctx context.Context, fp string) error {
	_, err := c.do(ctx, http.MethodPost, attention.DismissPath, map[string]any{"fingerprint": fp}, nil)
	return err
}
