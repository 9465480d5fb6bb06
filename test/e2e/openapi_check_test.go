package e2e

// Every request the end-to-end tests send through rmtDaemon.do, and its
// answer, is checked against the OpenAPI document the daemon serves
// (docs/reference/openapi.json) by kin-openapi's validator (issue 40): a
// body, a parameter or a status the document does not allow fails the
// test that met it.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"watchdog/docs"
)

var (
	contractOnce   sync.Once
	contractRouter routers.Router
	contractErr    error
)

// contract is the document's router, loaded once.
func contract() (routers.Router, error) {
	contractOnce.Do(func() {
		// The page's answers are text: checked for their status and
		// content type, their body read as a string.
		text := func(r io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(r)
			return string(b), err
		}
		for _, ct := range []string{"text/html", "text/event-stream"} {
			openapi3filter.RegisterBodyDecoder(ct, text)
		}
		doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
		if err != nil {
			contractErr = err
			return
		}
		// The servers' host is the default listen address; the tests'
		// daemons listen elsewhere.
		doc.Servers = nil
		contractRouter, contractErr = legacy.NewRouter(doc)
	})
	return contractRouter, contractErr
}

// checkContract validates one exchange: the request (reqBody its body)
// and the response (respBody its body) against the document. A request
// the document does not describe (a path it does not have, which tests
// send on purpose) is not checked; a request it calls invalid must have
// been refused (4xx), and the refusal must be one it describes.
func checkContract(t *testing.T, req *http.Request, reqBody string, resp *http.Response, respBody []byte) {
	t.Helper()
	router, err := contract()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(strings.NewReader(reqBody))
	route, params, err := router.FindRoute(r)
	if err != nil {
		return
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	if reqErr != nil && resp.StatusCode < 400 {
		t.Errorf("OpenAPI: %s %s answered %d to a request the document calls invalid: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body:    io.NopCloser(bytes.NewReader(respBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("OpenAPI: %s %s → %d does not match the document: %v\nbody: %.400s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, respBody)
	}
}
