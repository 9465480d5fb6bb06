package docs

import _ "embed"

// OpenAPI is the HTTP API's OpenAPI 3.1 document (`make openapi`, ADR-0064),
// served at GET /api/openapi.json.
//
//go:embed reference/openapi.json
var OpenAPI []byte
