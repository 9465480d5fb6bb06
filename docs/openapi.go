package docs

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document of the HTTP API
// (reference/openapi.json, written by `make openapi` from the code:
// internal/openapidoc), served at GET /api/openapi.json.
//
//go:embed reference/openapi.json
var OpenAPI []byte
