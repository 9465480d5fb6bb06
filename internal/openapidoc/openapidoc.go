// Package openapidoc builds the HTTP API's OpenAPI 3.1 document
// (docs/reference/openapi.json): routes written here, body schemas generated
// from the wire types (ADR-0064).
package openapidoc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"watchdog/api"
	"watchdog/attention"
	"watchdog/internal/unixtime"
	"watchdog/state"
	"watchdog/transitions"
	"watchdog/wire"
)

// Version is the document's info.version: the API's, bumped when a route
// or a body changes incompatibly.
const Version = "1.0.0"

// Build returns the document.
func Build() (*openapi3.T, error) {
	b := &builder{schemas: openapi3.Schemas{}}
	b.gen = openapi3gen.NewGenerator(
		openapi3gen.SchemaCustomizer(customize),
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.CreateTypeNameGenerator(typeName),
	)
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{
			Title:   "watchdog",
			Version: Version,
			Description: "The HTTP API of watchdog serve: entities with one normalized state each (lifecycle, health, delivery, " +
				"reasons and evidence), the write path's transitions and heartbeats, the attention queue and its triage. " +
				"Every time is Unix seconds as a number. Over TCP a bearer token (auth.token_file, auth.tokens); on the local " +
				"socket (listen_unix) no token: the kernel names the caller. See docs/reference/http-api.md.",
		},
		Servers: openapi3.Servers{{URL: "http://127.0.0.1:9715", Description: "the default listen address"}},
		Paths:   openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas: b.schemas,
			SecuritySchemes: openapi3.SecuritySchemes{
				"bearer": &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
					Type: "http", Scheme: "bearer",
					Description: "A token of auth.token_file (scope admin) or auth.tokens (scopes read, report, triage, admin). " +
						"The local socket needs none: its caller is the uid the kernel names. auth.public_reads opens the reads.",
				}},
				"session": &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{
					Type: "apiKey", In: "cookie", Name: api.SessionCookie,
					Description: "The operator's page's session, from POST /api/session.",
				}},
			},
		},
	}
	b.doc = doc
	if err := b.routes(); err != nil {
		return nil, err
	}
	if err := b.limits(); err != nil {
		return nil, err
	}
	toOpenAPI31(doc)
	return doc, nil
}

// limits writes package wire's byte limits into the request schemas'
// descriptions: a byte count is no JSON Schema keyword (maxLength counts runes).
func (b *builder) limits() error {
	bytesOf := func(n int) string { return fmt.Sprintf("At most %d bytes (422 over_limit beyond).", n) }
	for _, l := range []struct {
		schema, field, say string
	}{
		{"Register", "id", bytesOf(wire.MaxID)},
		{"Register", "label", bytesOf(wire.MaxLabel)},
		{"Register", "host_id", bytesOf(wire.MaxID)},
		{"Register", "boot_id", bytesOf(wire.MaxID)},
		{"Register", "heartbeat_file", bytesOf(wire.MaxPath)},
		{"Register", "artifacts_root", bytesOf(wire.MaxPath)},
		{"Register", "lock_files", fmt.Sprintf("At most %d paths of %d bytes each.", wire.MaxListItems, wire.MaxPath)},
		{"Register", "depends_on", fmt.Sprintf("At most %d ids of %d bytes each.", wire.MaxListItems, wire.MaxID)},
		{"Register", "metadata", fmt.Sprintf("An object of at most %d bytes as sent, nested at most %d deep.", wire.MaxMetadata, wire.MaxMetadataDepth)},
		{"Reason", "message", bytesOf(wire.MaxMessage)},
		{"Reason", "evidence", fmt.Sprintf("At most %d items, each text field at most %d bytes; the whole reason at most %d bytes.", wire.MaxEvidence, wire.MaxEvidenceField, wire.MaxReasonBytes)},
		{"Heartbeat", "progress", fmt.Sprintf("At most %d bytes (400 beyond).", wire.MaxProgress)},
	} {
		s, ok := b.schemas[l.schema]
		if !ok || s.Value == nil || s.Value.Properties[l.field] == nil {
			return fmt.Errorf("limits: %s has no field %s", l.schema, l.field)
		}
		p := s.Value.Properties[l.field]
		v := *p.Value // shared schemas (a string's) must not take another field's words
		v.Description = strings.TrimSpace(v.Description + " " + l.say)
		s.Value.Properties[l.field] = openapi3.NewSchemaRef("", &v)
	}
	return nil
}

// JSON is the document as docs/reference/openapi.json holds it.
func JSON() ([]byte, error) {
	doc, err := Build()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the OpenAPI document: %w", err)
	}
	return append(out, '\n'), nil
}

type builder struct {
	doc     *openapi3.T
	gen     *openapi3gen.Generator
	schemas openapi3.Schemas
	err     error
}

// typeName names a component schema by its Go type, prefixed where two
// packages share a name ("attention.Item" → "AttentionItem").
func typeName(t reflect.Type) string {
	if t == reflect.TypeFor[unixtime.Time]() || t == reflect.TypeFor[json.RawMessage]() || t == reflect.TypeFor[wire.OptString]() {
		return "" // inline (customize)
	}
	name := t.Name()
	switch pkg := t.PkgPath(); {
	case strings.HasSuffix(pkg, "/attention") && name != "Queue":
		return "Attention" + name
	case strings.HasSuffix(pkg, "/api") && (name == "Dismissal" || name == "Error"):
		if name == "Error" {
			return "Error"
		}
		return "Dismissal"
	}
	return name
}

// requestTypes are the bodies clients send: a field left out takes its default,
// so none is required by its tag alone (the handler 400s what it needs).
var requestTypes = map[reflect.Type]bool{
	reflect.TypeFor[wire.Register](): true, reflect.TypeFor[wire.Transition](): true, reflect.TypeFor[wire.Heartbeat](): true,
	reflect.TypeFor[wire.Artifact](): true, reflect.TypeFor[wire.Ref](): true, reflect.TypeFor[wire.Reason](): true,
	reflect.TypeFor[wire.Schedule](): true, reflect.TypeFor[api.Snooze](): true, reflect.TypeFor[api.Dismiss](): true,
	reflect.TypeFor[api.Session](): true,
}

// required are the JSON names of t's fields always written: those without
// omitempty or omitzero (a response's, which the handler encodes whole).
func required(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case !f.IsExported() || name == "-":
		case f.Anonymous && name == "":
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				continue // an embedded pointer may be nil: none of its fields
			}
			out = append(out, required(ft)...)
		case strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero"):
		default:
			if name == "" {
				name = f.Name
			}
			out = append(out, name)
		}
	}
	return out
}

// customize gives the wire's own encodings their JSON shapes, and marks a
// response's always-written fields required.
func customize(_ string, t reflect.Type, _ reflect.StructTag, s *openapi3.Schema) error {
	if t.Kind() == reflect.Struct && !requestTypes[t] && s.Type != nil && s.Type.Is("object") {
		s.Required = required(t)
	}
	switch t {
	case reflect.TypeFor[unixtime.Time]():
		*s = openapi3.Schema{Type: &openapi3.Types{"number"}, Description: "Unix seconds (a fraction allowed)", Nullable: s.Nullable}
	case reflect.TypeFor[json.RawMessage]():
		*s = openapi3.Schema{Description: "any JSON value", Nullable: s.Nullable}
	case reflect.TypeFor[wire.OptString]():
		*s = openapi3.Schema{Type: &openapi3.Types{"string", "null"}, Description: "a string, or null to clear it"}
	case reflect.TypeFor[state.ExitStatus]():
		// Its MarshalJSON: exactly one of code and signal, the other null.
		num := openapi3.Schema{Type: &openapi3.Types{"number"}, Description: "Unix seconds (a fraction allowed)"}
		*s = openapi3.Schema{
			Type: &openapi3.Types{"object"}, Nullable: s.Nullable, Required: []string{"code", "signal", "at"},
			Description: "how the process ended: its exit code, or the signal that killed it (the other null)",
			Properties: openapi3.Schemas{
				"code":   openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{"integer", "null"}}),
				"signal": openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{"string", "null"}, Description: "SIGKILL, SIGTERM, …"}),
				"at":     openapi3.NewSchemaRef("", &num),
			},
		}
	}
	return nil
}

// schema is the schema of v's type, its components added.
func (b *builder) schema(v any) *openapi3.SchemaRef {
	ref, err := b.gen.NewSchemaRefForValue(v, b.schemas)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("schema of %T: %w", v, err)
	}
	return ref
}

// jsonBody is a JSON content of v's schema.
func (b *builder) jsonBody(v any) openapi3.Content {
	return openapi3.NewContentWithJSONSchemaRef(b.schema(v))
}

// op is one operation: its route, what it takes and answers.
type op struct {
	method, path, id, summary string
	tags                      []string
	params                    []*openapi3.Parameter
	body                      any // the request body's Go value, nil for none
	example                   any // a valid request body, as a client sends it
	bodyRequired              bool
	ok                        int    // the success status
	okBody                    any    // the success body's Go value (nil: none)
	okContent                 string // a non-JSON success content type
	errors                    []int  // the error statuses, each with the Error body
	public                    bool   // no credentials needed
	scope                     string // the token scope it needs
	oneOf                     []any  // the success body is one of these
	htmlErrors                []int  // error statuses answered as a page (text/html), not JSON
}

func (b *builder) add(o op) {
	operation := &openapi3.Operation{OperationID: o.id, Summary: o.summary, Tags: o.tags, Responses: openapi3.NewResponses()}
	for _, p := range o.params {
		operation.Parameters = append(operation.Parameters, &openapi3.ParameterRef{Value: p})
	}
	if o.body != nil {
		content := b.jsonBody(o.body)
		if o.example != nil {
			content.Get("application/json").Example = o.example
		}
		operation.RequestBody = &openapi3.RequestBodyRef{Value: &openapi3.RequestBody{Required: o.bodyRequired, Content: content}}
	}
	okDesc := "OK"
	if o.ok == 201 {
		okDesc = "Created"
	}
	resp := &openapi3.Response{Description: &okDesc}
	switch {
	case o.okContent == "application/json":
		resp.Content = openapi3.NewContentWithJSONSchema(&openapi3.Schema{Type: &openapi3.Types{"object"}, Description: "an OpenAPI 3.1 document"})
	case o.okContent != "":
		resp.Content = openapi3.Content{o.okContent: &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{"string"}})}}
	case len(o.oneOf) > 0:
		s := &openapi3.Schema{}
		for _, v := range o.oneOf {
			s.OneOf = append(s.OneOf, b.schema(v))
		}
		resp.Content = openapi3.NewContentWithJSONSchema(s)
	case o.okBody != nil:
		resp.Content = b.jsonBody(o.okBody)
	}
	if o.ok == 204 {
		d := "No Content"
		resp.Description = &d
	}
	operation.Responses.Set(fmt.Sprint(o.ok), &openapi3.ResponseRef{Value: resp})
	if o.id == "register" {
		d := "Updated: the id existed"
		operation.Responses.Set("200", &openapi3.ResponseRef{Value: &openapi3.Response{Description: &d, Content: b.jsonBody(wire.Entity{})}})
	}
	for _, code := range o.errors {
		// Per operation, not a $ref: Prism looks for a 401 in an operation's own.
		desc := errorDescriptions[code]
		content := b.jsonBody(api.Error{})
		if slices.Contains(o.htmlErrors, code) {
			desc = pageErrors[code]
			content = openapi3.Content{"text/html": &openapi3.MediaType{Schema: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{"string"}})}}
		}
		operation.Responses.Set(fmt.Sprint(code), &openapi3.ResponseRef{Value: &openapi3.Response{Description: &desc, Content: content}})
	}
	if o.public {
		operation.Security = &openapi3.SecurityRequirements{}
	} else {
		req := openapi3.SecurityRequirements{{"bearer": scopes(o.scope)}, {"session": []string{}}}
		operation.Security = &req
	}
	b.doc.AddOperation(o.path, o.method, operation)
}

func scopes(s string) []string {
	if s == "" {
		return []string{}
	}
	return []string{s}
}

// pageErrors say what the page's own error pages mean.
var pageErrors = map[int]string{
	400: "A parameter the page cannot use: the page, with one message saying which.",
	401: "No credentials: the page's sign-in form (it posts the token to /api/session).",
	404: "No such entity: the page saying so.",
}

// errorDescriptions say what each error status means and its body's causes.
var errorDescriptions = map[int]string{
	400: "The request is malformed: a body that does not decode or has an unknown field, a value out of range, a bad parameter, an ambiguous host name (cause bad_request, invalid_input).",
	401: "No credentials, or a token the daemon does not accept (cause unauthorized); WWW-Authenticate says Bearer.",
	403: "A Host header that is not this daemon's (host_not_allowed), a cross-origin write (cross_origin), a scope the token lacks, or an act on a process or entity that is not the caller's (forbidden).",
	404: "No such entity or item (not_found), an unknown entity type (unknown_type), or no such path (not_found).",
	405: "The path exists under another method (method_not_allowed); Allow names it.",
	409: "expect_from is not the entity's current lifecycle (conflict): read it and decide again.",
	413: "The body is larger than the limit, 1 MiB (too_large).",
	415: "A body that is not application/json (unsupported_media_type).",
	422: "The write path refused what decoded: a transition the type's graph does not have (invalid_transition), a state it does not know (unknown_state), a reason code not registered or not the type's (unknown_reason), a terminal transition without a reason (reason_required), a list over its limit (over_limit), a pid the caller may not name (pid_refused).",
	500: "The daemon failed (internal): its log says why.",
	503: "The store cannot take writes now (unavailable), or the daemon is not ready (not_ready): nothing was written; retry after Retry-After.",
	504: "The write's commit was attempted and its result lost (outcome_unknown): read the entity before retrying.",
}

func pathParam(name, desc string) *openapi3.Parameter {
	return openapi3.NewPathParameter(name).WithDescription(desc).WithSchema(openapi3.NewStringSchema())
}

func queryParam(name, desc string, s *openapi3.Schema) *openapi3.Parameter {
	return openapi3.NewQueryParameter(name).WithDescription(desc).WithSchema(s)
}

func intRange(min, max float64) *openapi3.Schema {
	return openapi3.NewIntegerSchema().WithMin(min).WithMax(max)
}

func enum(values ...string) *openapi3.Schema {
	s := openapi3.NewStringSchema()
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

func (b *builder) routes() error {
	typeDesc := "the entity type (" + strings.Join(transitions.Types(), ", ") + "; aliases such as run for session)"
	typ, id := pathParam("type", typeDesc), pathParam("id", "the entity's id")
	severities := make([]string, 0, len(state.Severities))
	for _, s := range state.Severities {
		severities = append(severities, string(s))
	}
	read := []int{400, 401, 403, 405, 413, 500, 503}
	write := []int{400, 401, 403, 404, 405, 409, 413, 415, 422, 500, 503, 504}

	b.add(op{method: "GET", path: "/healthz", id: "healthz", summary: "The process is up", tags: []string{"probes"}, ok: 200, okContent: "text/plain", errors: []int{403}, public: true})
	b.add(op{method: "GET", path: "/readyz", id: "readyz", summary: "The store takes writes and the last sweep is recent", tags: []string{"probes"}, ok: 200, okContent: "text/plain", errors: []int{403, 503}, public: true})
	b.add(op{method: "GET", path: "/metrics", id: "metrics", summary: "Prometheus exposition (docs/reference/metrics.md)", tags: []string{"probes"}, ok: 200, okContent: "text/plain", errors: []int{403}, public: true})
	b.add(op{method: "GET", path: "/api/openapi.json", id: "openapi", summary: "This document", tags: []string{"probes"}, ok: 200, okContent: "application/json", errors: []int{403}, public: true})

	b.add(op{method: "POST", path: "/api/v1/entities", id: "register", summary: "Register an entity, or update an existing id", tags: []string{"entities"},
		body: wire.Register{}, bodyRequired: true, example: map[string]any{"type": "session", "id": "s-42", "label": "reviewer for PR 1064", "lifecycle": "running", "timeout_seconds": 900},
		ok: 201, okBody: wire.Entity{}, errors: write, scope: "report"})
	b.add(op{method: "GET", path: "/api/v1/entities", id: "listEntities", summary: "List entities, paginated", tags: []string{"entities"},
		params: []*openapi3.Parameter{
			queryParam("type", typeDesc, openapi3.NewStringSchema()),
			queryParam("severity", "severities, comma separated ("+strings.Join(severities, ",")+")", openapi3.NewStringSchema()),
			queryParam("host", "a host id, or the hostname its daemon recorded", openapi3.NewStringSchema()),
			queryParam("order", "severity (most severe first) or id (walks every entity once)", enum("severity", "id")),
			queryParam("limit", "the page's size", intRange(1, float64(wire.MaxEntitiesPage))),
			queryParam("after", "the cursor: the previous page's next", openapi3.NewStringSchema()),
			queryParam("process", "each open entity of this daemon's host with its process facts", openapi3.NewBoolSchema()),
		},
		ok: 200, okBody: wire.EntityList{}, errors: read, scope: "read"})
	b.add(op{method: "GET", path: "/api/v1/entities/{type}/{id}", id: "getEntity", summary: "One entity, its state and latest transitions", tags: []string{"entities"},
		params: []*openapi3.Parameter{typ, id}, ok: 200, okBody: wire.Entity{}, errors: append([]int{404}, read...), scope: "read"})
	b.add(op{method: "GET", path: "/api/v1/entities/{type}/{id}/transitions", id: "getTransitions", summary: "The entity's audit rows, paged by sequence", tags: []string{"entities"},
		params: []*openapi3.Parameter{typ, id,
			queryParam("after", "a sequence (0: from the start)", openapi3.NewIntegerSchema().WithMin(0)),
			queryParam("limit", "the page's size", intRange(1, float64(wire.MaxTransitionsPage))),
		}, ok: 200, okBody: wire.TransitionPage{}, errors: append([]int{404}, read...), scope: "read"})
	b.add(op{method: "POST", path: "/api/v1/entities/{type}/{id}/heartbeat", id: "heartbeat", summary: "Record a heartbeat", tags: []string{"entities"},
		params: []*openapi3.Parameter{typ, id}, body: wire.Heartbeat{}, example: map[string]any{"progress": "3 of 7 files reviewed"}, ok: 200, okBody: wire.Entity{}, errors: write, scope: "report"})
	b.add(op{method: "POST", path: "/api/v1/entities/{type}/{id}/transitions", id: "transition", summary: "Change the lifecycle through the write path", tags: []string{"entities"},
		params: []*openapi3.Parameter{typ, id}, body: wire.Transition{}, bodyRequired: true,
		example: map[string]any{"to": "completed", "expect_from": "running", "reason": map[string]any{"code": "run.completed.exit_zero", "message": "review posted"}},
		ok:      200, okBody: wire.TransitionResult{}, errors: write, scope: "report"})

	b.add(op{method: "GET", path: "/api/attention", id: "attentionQueue", summary: "The attention queue", tags: []string{"attention"},
		params: []*openapi3.Parameter{
			queryParam("severity", "severities, comma separated (critical,warning,info)", openapi3.NewStringSchema()),
			queryParam("limit", "at most this many items", intRange(1, float64(attention.MaxLimit))),
			queryParam("host", "a host id, or the hostname its daemon recorded", openapi3.NewStringSchema()),
			queryParam("include_dismissed", "also the dismissed and snoozed items, marked", openapi3.NewBoolSchema()),
		}, ok: 200, okBody: attention.Queue{}, errors: read, scope: "read"})
	b.add(op{method: "POST", path: attention.SnoozePath, id: "snooze", summary: "Snooze a queue item, several, or a cluster", tags: []string{"attention"},
		body: api.Snooze{}, bodyRequired: true, example: map[string]any{"fingerprint": "session:s-42:run.failed.exit_nonzero", "for": 3600}, ok: 200, oneOf: []any{api.Dismissal{}, api.Triaged{}}, errors: write, scope: "triage"})
	b.add(op{method: "POST", path: attention.DismissPath, id: "dismiss", summary: "Dismiss a queue item, several, or a cluster", tags: []string{"attention"},
		body: api.Dismiss{}, bodyRequired: true, example: map[string]any{"fingerprint": "session:s-42:run.failed.exit_nonzero"}, ok: 200, oneOf: []any{api.Dismissal{}, api.Triaged{}}, errors: write, scope: "triage"})
	b.add(op{method: "GET", path: "/api/attention/triage", id: "triageLog", summary: "The triage log, newest first", tags: []string{"attention"},
		params: []*openapi3.Parameter{
			queryParam("before", "a sequence: the previous page's next_before", openapi3.NewIntegerSchema().WithMin(0)),
			queryParam("limit", "the page's size", intRange(1, float64(wire.MaxTriagePage))),
		}, ok: 200, okBody: wire.TriagePage{}, errors: read, scope: "read"})

	b.add(op{method: "POST", path: "/api/session", id: "login", summary: "The page's sign-in: a session cookie for a token", tags: []string{"page"},
		body: api.Session{}, bodyRequired: true, example: map[string]any{"token": "the token of auth.token_file"}, ok: 204, errors: []int{400, 401, 403, 413, 415}, public: true})
	b.add(op{method: "GET", path: "/events", id: "events", summary: "The page's stream of the view's changes", tags: []string{"page"},
		ok: 200, okContent: "text/event-stream", errors: []int{401, 503}})
	b.add(op{method: "GET", path: "/", id: "page", summary: "The operator's page: the queue and the entities", tags: []string{"page"}, ok: 200, okContent: "text/html", errors: []int{400, 401, 403}, htmlErrors: []int{400, 401}})
	b.add(op{method: "GET", path: "/entities/{type}/{id}", id: "entityPage", summary: "The operator's page of one entity", tags: []string{"page"},
		params: []*openapi3.Parameter{typ, id}, ok: 200, okContent: "text/html", errors: []int{401, 403, 404}, htmlErrors: []int{401, 404}})
	b.add(op{method: "GET", path: "/runbook", id: "runbook", summary: "The runbook's reason-code sections", tags: []string{"page"}, ok: 200, okContent: "text/html", errors: []int{403}, public: true})
	return b.err
}

// toOpenAPI31 rewrites openapi3gen's 3.0 nullable into a 3.1 type list with "null".
func toOpenAPI31(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.Schema)
	walk = func(s *openapi3.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.Nullable {
			s.Nullable = false
			if s.Type != nil && !s.Type.Includes("null") {
				t := append(openapi3.Types{}, *s.Type...)
				t = append(t, "null")
				s.Type = &t
			}
		}
		for _, p := range s.Properties {
			walk(p.Value)
		}
		if s.Items != nil {
			walk(s.Items.Value)
		}
		if s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema.Value)
		}
		for _, x := range s.OneOf {
			walk(x.Value)
		}
	}
	names := make([]string, 0, len(doc.Components.Schemas))
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		walk(doc.Components.Schemas[n].Value)
	}
}
