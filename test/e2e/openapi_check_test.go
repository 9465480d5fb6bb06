package e2e

// Every request the end-to-end tests send through http.DefaultTransport,
// and its answer, is checked against the OpenAPI document the daemon
// serves (docs/reference/openapi.json) by kin-openapi's validator (issue
// 40): a body, a parameter or a status the document does not allow fails
// the run (TestMain prints each).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

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

// contractViolation validates one exchange: the request (reqBody its
// body) and the response (respBody its body) against the document; nil
// when they match. A request the document does not describe (a path it
// does not have, which tests send on purpose) is not checked; a request
// it calls invalid must have been refused (4xx), and the refusal must be
// one it describes.
func contractViolation(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	router, err := contract()
	if err != nil {
		return fmt.Errorf("the OpenAPI document: %w", err)
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := router.FindRoute(r)
	if err != nil {
		return nil
	}
	in := &openapi3filter.RequestValidationInput{
		Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	}
	if reqErr := openapi3filter.ValidateRequest(context.Background(), in); reqErr != nil && resp.StatusCode < 400 {
		return fmt.Errorf("%s %s answered %d to a request the document calls invalid: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body:    io.NopCloser(bytes.NewReader(respBody)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return fmt.Errorf("%s %s → %d does not match the document: %v\nbody: %.400s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, respBody)
	}
	return nil
}

// contractTransport checks every exchange a test makes through
// http.DefaultTransport (every http.Client without a transport of its
// own: rmtDaemon.do, the fleet's, the page's reads) against the
// document; a stream (text/event-stream) is passed through unchecked.
// What it finds is kept in contractViolations and fails the run.
type contractTransport struct{ base http.RoundTripper }

var (
	contractMu         sync.Mutex
	contractViolations []string
	contractChecked    int
)

func (c contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the test reading the body meets the cut itself
	}
	v := contractViolation(req, reqBody, resp, respBody)
	contractMu.Lock()
	defer contractMu.Unlock()
	contractChecked++
	if v != nil {
		contractViolations = append(contractViolations, v.Error())
	}
	return resp, nil
}

// contractReport says what the transport found; false when a violation
// was.
func contractReport() bool {
	contractMu.Lock()
	defer contractMu.Unlock()
	fmt.Printf("OpenAPI: %d exchanges checked against docs/reference/openapi.json, %d violations\n", contractChecked, len(contractViolations))
	for _, v := range contractViolations {
		fmt.Println("OpenAPI violation:", v)
	}
	return len(contractViolations) == 0
}
