package e2e

// Stoplight's Prism, a validator this project did not write, in front of
// the built daemon (issue 40): for every operation of the OpenAPI
// document, valid requests built from its examples and schemas, with a
// token and without, through `prism proxy --errors` (any answer the
// document does not allow is Prism's error); and invalid ones (a body
// missing its required fields, a field of the wrong type, a number out of
// range) through a plain proxy, whose sl-violations header must name the
// request alone, never the daemon's answer. No 5xx anywhere.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"watchdog/docs"
	"watchdog/internal/testenv"
)

// freePort is a TCP port free on 127.0.0.1 now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrism runs `prism proxy spec upstream` (with extra flags) and
// returns its base URL once it answers.
func startPrism(t *testing.T, prism, spec, upstream string, extra ...string) string {
	t.Helper()
	port := freePort(t)
	args := append([]string{"proxy", spec, upstream, "--host", "127.0.0.1", "--port", fmt.Sprint(port)}, extra...)
	cmd := exec.Command(prism, args...)
	logPath := filepath.Join(t.TempDir(), "prism.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prism %v:\n%.4000s", extra, b)
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testenv.Eventually(t, "prism proxying", ceiling, func() (bool, string) {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	return base
}

// prismCase is one generated request.
type prismCase struct {
	name, method, path, body string
	token                    bool
}

// exampleValue is a valid value of a parameter's schema.
func exampleValue(s *openapi3.Schema) (string, bool) {
	switch {
	case len(s.Enum) > 0:
		return fmt.Sprint(s.Enum[0]), true
	case s.Type.Is("integer"):
		v := 1.0
		if s.Min != nil && *s.Min > v {
			v = *s.Min
		}
		return fmt.Sprint(int64(v)), true
	case s.Type.Is("boolean"):
		return "true", true
	}
	return "", false
}

// prismCases builds the requests from the document: each operation with
// its path filled (an entity that exists), its query parameters at valid
// values, its request example; then the invalid ones.
func prismCases(t *testing.T, doc *openapi3.T) (valid, invalid []prismCase) {
	t.Helper()
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, path := range paths {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			if op.OperationID == "events" {
				continue // a stream that does not end: its 200 is the page test's
			}
			p := strings.NewReplacer("{type}", "session", "{id}", "prism").Replace(path)
			var query, bad []string
			for _, pr := range op.Parameters {
				v := pr.Value
				if v.In != "query" || v.Schema == nil {
					continue
				}
				s := v.Schema.Value
				if val, ok := exampleValue(s); ok {
					query = append(query, v.Name+"="+val)
				}
				if s.Max != nil {
					bad = append(bad, fmt.Sprintf("%s=%d", v.Name, int64(*s.Max)+1))
				}
				if s.Type.Is("integer") {
					bad = append(bad, v.Name+"=abc")
				}
			}
			full := p
			if len(query) > 0 {
				full += "?" + strings.Join(query, "&")
			}
			body := ""
			if rb := op.RequestBody; rb != nil {
				if ex := rb.Value.Content.Get("application/json").Example; ex != nil {
					b, _ := json.Marshal(ex)
					body = string(b)
				}
				// A body with none of its required fields (where it has
				// some), and one whose fields have the wrong types.
				if s := rb.Value.Content.Get("application/json").Schema; s != nil && s.Value != nil && len(s.Value.Required) > 0 {
					invalid = append(invalid, prismCase{name: op.OperationID + " empty body", method: method, path: p, body: "{}", token: true})
				}
				invalid = append(invalid, prismCase{name: op.OperationID + " wrong types", method: method, path: p,
					body: `{"type": 5, "id": [], "to": false, "fingerprint": 3, "token": 1, "progress": {}}`, token: true})
			}
			// With a token; without one it is valid only where the
			// document asks for no credentials, and else a request the
			// daemon must refuse as the document says (401).
			valid = append(valid, prismCase{name: op.OperationID + " with a token", method: method, path: full, body: body, token: true})
			noToken := prismCase{name: op.OperationID + " without a token", method: method, path: full, body: body}
			if op.Security != nil && len(*op.Security) == 0 {
				valid = append(valid, noToken)
			} else {
				invalid = append(invalid, noToken)
			}
			for _, q := range bad {
				invalid = append(invalid, prismCase{name: op.OperationID + " " + q, method: method, path: p + "?" + q, token: true})
			}
		}
	}
	return valid, invalid
}

func (c prismCase) send(t *testing.T, base string) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if c.body != "" {
		rd = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token {
		req.Header.Set("Authorization", "Bearer "+rmtToken)
	}
	resp, err := (&http.Client{Timeout: ceiling}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestPrismProxyFindsNoViolation(t *testing.T) {
	prism := os.Getenv("WATCHDOG_PRISM")
	if prism == "" {
		t.Skip("WATCHDOG_PRISM names no prism: `make test` installs the pinned one and sets it")
	}
	if _, err := os.Stat(prism); err != nil {
		t.Fatalf("WATCHDOG_PRISM=%s: %v (make node-tools installs it)", prism, err)
	}
	d := rmtStart(t, true)
	spec := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(spec, docs.OpenAPI, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	// The entity the paths name, running.
	p := testenv.Sleep(t)
	if code, body := d.do(t, "POST", "/api/v1/entities", fmt.Sprintf(`{"type":"session","id":"prism","lifecycle":"running","pid":%d}`, p.Process.Pid)); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	strict := startPrism(t, prism, spec, d.base, "--errors")
	plain := startPrism(t, prism, spec, d.base)

	valid, invalid := prismCases(t, doc)
	for _, c := range valid {
		resp, body := c.send(t, strict)
		if resp.StatusCode >= 500 || strings.Contains(body, "stoplight.io/prism/errors") {
			t.Errorf("valid %s (%s %s): %d %.600s", c.name, c.method, c.path, resp.StatusCode, body)
		}
	}
	for _, c := range invalid {
		resp, body := c.send(t, plain)
		if resp.StatusCode >= 500 {
			t.Errorf("invalid %s (%s %s): %d %.600s", c.name, c.method, c.path, resp.StatusCode, body)
		}
		if v := resp.Header.Get("sl-violations"); v != "" {
			var vs []struct {
				Location []string `json:"location"`
				Message  string   `json:"message"`
			}
			if err := json.Unmarshal([]byte(v), &vs); err != nil {
				t.Fatalf("sl-violations %q: %v", v, err)
			}
			for _, x := range vs {
				if len(x.Location) > 0 && x.Location[0] == "response" {
					t.Errorf("invalid %s (%s %s): the daemon's %d answer breaks the document: %s at %v", c.name, c.method, c.path, resp.StatusCode, x.Message, x.Location)
				}
			}
		}
		if resp.StatusCode < 400 {
			t.Errorf("invalid %s (%s %s): accepted, %d", c.name, c.method, c.path, resp.StatusCode)
		}
	}
	t.Logf("%d valid and %d invalid requests through Prism %s", len(valid), len(invalid), filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(prism)))))
}
