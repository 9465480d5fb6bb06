package openapidoc

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"watchdog/api"
	"watchdog/docs"
)

var update = flag.Bool("update", false, "write docs/reference/openapi.json from the code (make openapi)")

const docPath = "../../docs/reference/openapi.json"

// The committed document is the one the code builds: a field added to a
// wire type, or a route here, fails this test until `make openapi`
// writes it again; and the daemon serves that same file.
func TestDocumentIsTheCodes(t *testing.T) {
	got, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(docPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return // the embedded copy is this binary's: the next run checks it
	}
	want, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the code builds: run `make openapi`", docPath)
	}
	if !bytes.Equal(docs.OpenAPI, want) {
		t.Fatalf("the daemon's embedded document differs from %s", docPath)
	}
}

// The document is valid OpenAPI (kin-openapi's own checks), and names
// every route the API's router has, and no other: the router's patterns
// are the API's (api.Patterns), the page's included.
func TestDocumentNamesEveryRoute(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	var inDoc []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inDoc = append(inDoc, method+" "+path)
		}
	}
	var inRouter []string
	for _, p := range api.Patterns() {
		method, path, _ := strings.Cut(p, " ")
		switch path {
		case "/{$}":
			path = "/"
		case "/assets/":
			continue // the page's static files, not an API
		}
		inRouter = append(inRouter, method+" "+path)
	}
	sort.Strings(inDoc)
	sort.Strings(inRouter)
	if !slices.Equal(inDoc, inRouter) {
		t.Errorf("the document's operations\n  %q\nare not the router's\n  %q", inDoc, inRouter)
	}
}

// Every route the reference's endpoint table names (docs/reference/
// http-api.md) is an operation of the document, /api/ paths first among
// them: the prose and the contract name the same API.
func TestDocumentNamesTheReferencesRoutes(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile("../../docs/reference/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile("`(GET|POST|PUT|DELETE) (/[^`\\[? ]*)")
	n, api := 0, 0
	for line := range strings.SplitSeq(string(ref), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		for _, m := range route.FindAllStringSubmatch(cell, -1) {
			n++
			if strings.HasPrefix(m[2], "/api/") {
				api++
			}
			item := doc.Paths.Find(m[2])
			if item == nil || item.GetOperation(m[1]) == nil {
				t.Errorf("the reference names %s %s; the document has no such operation", m[1], m[2])
			}
		}
	}
	if api < 10 {
		t.Fatalf("found %d routes (%d under /api/) in the reference's table: the test reads too little", n, api)
	}
}
