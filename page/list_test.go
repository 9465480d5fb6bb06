package page

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"watchdog/state"
)

var (
	rowRe  = regexp.MustCompile(`data-testid="entity" data-type="([^"]*)" data-id="([^"]*)"`)
	nextRe = regexp.MustCompile(`data-testid="next-page" rel="next" href="([^"]*)"`)
)

// rows are the table's rows as "type/id", in the page's order.
func rows(body string) []string {
	var out []string
	for _, m := range rowRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}

func nextLink(body string) string {
	m := nextRe.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestTablePagesOnTheServer: the table lists TablePage rows at a time;
// its Next links walk every selected entity exactly once, in the order
// asked (by id here, by severity by default: failed first), with the
// filters kept on every page; the last page has no Next and each later
// page a link back to the first.
func TestTablePagesOnTheServer(t *testing.T) {
	e := newEnv(t, "")
	const sessions = 2*TablePage + 7
	for i := range sessions {
		e.register("session", fmt.Sprintf("s-%03d", i), "", "running")
	}
	for i := range 3 {
		e.register("agent", fmt.Sprintf("a-%d", i), "", "idle")
	}
	e.move("session", "s-100", "failed", state.RunFailedExitNonzero, "exit 3")

	tests := []struct {
		name, path string
		total      int
		first      string // the first row of the first page
		sorted     bool   // the walk is in id order
	}{
		{"severity order, every type", "/", sessions + 3, "session/s-100", false},
		{"id order, sessions", "/?type=session&order=id", sessions, "session/s-000", true},
		{"critical only", "/?severity=critical", 1, "session/s-100", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var all []string
			path := tc.path
			for pages := 0; path != ""; pages++ {
				if pages > tc.total/TablePage+1 {
					t.Fatalf("more pages than %d rows make", tc.total)
				}
				body := e.page(path)
				got := rows(body)
				if len(got) > TablePage || (len(got) < TablePage && nextLink(body) != "") {
					t.Fatalf("%s: %d rows, next %q", path, len(got), nextLink(body))
				}
				if pages == 0 {
					if len(got) == 0 || got[0] != tc.first {
						t.Fatalf("first row %v, want %s", got, tc.first)
					}
					if strings.Contains(body, `data-testid="first-page"`) {
						t.Fatal("the first page links to the first page")
					}
				} else if !strings.Contains(body, `data-testid="first-page"`) {
					t.Fatalf("%s: no link back to the first page", path)
				}
				want := fmt.Sprintf("%d–%d of %d", len(all)+1, len(all)+len(got), tc.total)
				if tc.total > TablePage && !strings.Contains(body, want) {
					t.Fatalf("%s: the count does not read %q", path, want)
				}
				all = append(all, got...)
				path = nextLink(body)
				for _, kept := range []string{"type=session", "severity=critical", "order=id"} {
					if strings.Contains(tc.path, kept) && path != "" && !strings.Contains(path, kept) {
						t.Fatalf("next link %q lost %s", path, kept)
					}
				}
			}
			if len(all) != tc.total {
				t.Fatalf("walked %d rows, want %d", len(all), tc.total)
			}
			seen := map[string]bool{}
			for _, k := range all {
				if seen[k] {
					t.Fatalf("%s listed twice", k)
				}
				seen[k] = true
			}
			if tc.sorted && !slices.IsSorted(all) {
				t.Fatalf("not in id order: %v", all)
			}
		})
	}
}

// TestTableBadParameters: a parameter the page cannot use is one message
// naming it and a 400, with the queue still shown and no rows.
func TestTableBadParameters(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "s-1", "", "running")
	tests := []struct{ path, want string }{
		{"/?order=newest", `order &#34;newest&#34; is not one of severity, id`},
		{"/?after=garbage", `is not a cursor this list wrote`},
		{"/?after=eyJvIjoic2V2ZXJpdHkiLCJ0Ijoic2Vzc2lvbiIsImkiOiJzLTEifQ&order=id", `the cursor belongs to order=severity`},
		{"/?queue=0", `queue &#34;0&#34; is not a number of items from 1 to 500`},
		{"/?type=nope", `type &#34;nope&#34; is not an entity type`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			status, body := e.get(tc.path)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", status)
			}
			if !strings.Contains(body, `data-testid="filter-error"`) || !strings.Contains(body, tc.want) {
				t.Fatalf("no error naming %q:\n%s", tc.want, body)
			}
			if !strings.Contains(body, `data-testid="queue"`) || len(rows(body)) != 0 {
				t.Fatal("want the queue and no rows")
			}
		})
	}
}

// TestFragmentIsMainAlone: asked with the fragment header, a page answers
// its <main>'s content alone (what the script swaps in), the moment it
// was made in a header.
func TestFragmentIsMainAlone(t *testing.T) {
	e := newEnv(t, "")
	e.register("session", "s-1", "", "running")
	for _, path := range []string{"/", "/entities/session/s-1"} {
		req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
		req.Header.Set(FragmentHeader, "main")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		body := string(raw)
		if resp.StatusCode != 200 || strings.Contains(body, "<html") || strings.Contains(body, "<main") || !strings.Contains(body, "s-1") {
			t.Fatalf("%s: %d, not main's content alone:\n%s", path, resp.StatusCode, body)
		}
		if resp.Header.Get("X-Watchdog-Generated-At") == "" {
			t.Fatalf("%s: no X-Watchdog-Generated-At", path)
		}
	}
}
