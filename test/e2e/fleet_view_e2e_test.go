package e2e

// Issue 27 end to end: three daemons with three host ids share one
// PostgreSQL database. Each daemon's live view holds what it owns (its
// host's entities; the leader also the host-less ones), while any daemon's
// list, queue and `status --server` show every host's entities, paginated,
// agreeing with each owner's own answer for its host.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"watchdog/internal/testenv"
	"watchdog/store"
	"watchdog/wire"
)

// viewEntities is the daemon's watchdog_view_entities, -1 when unread.
func (f *fleetDaemon) viewEntities(t *testing.T) int {
	t.Helper()
	code, body := f.do(t, "GET", "/metrics", "")
	if code != http.StatusOK {
		return -1
	}
	m := regexp.MustCompile(`(?m)^watchdog_view_entities (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// walk reads the whole list through pages of size limit, following next,
// and returns every entity's "type/id host lifecycle severity display",
// failing on an entity seen twice.
func (f *fleetDaemon) walk(t *testing.T, query string, limit int) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	after := ""
	for pages := 0; ; pages++ {
		q := fmt.Sprintf("/api/v1/entities?order=id&limit=%d&%s", limit, query)
		if after != "" {
			q += "&after=" + after
		}
		code, body := f.do(t, "GET", q, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", q, code, body)
		}
		var l wire.EntityList
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > limit {
			t.Fatalf("GET %s: %d items, limit %d", q, len(l.Items), limit)
		}
		for _, e := range l.Items {
			k := e.Type + "/" + e.ID
			if seen[k] {
				t.Fatalf("walk of %s by %s: %s twice", query, f.host, k)
			}
			seen[k] = true
			out = append(out, fmt.Sprintf("%s %s %s %s %s %s %s", k, e.HostID, e.State.Lifecycle, e.State.Health, e.State.Severity, e.State.Tone, e.Display))
		}
		if after = l.Next; after == "" {
			return out
		}
	}
}

func TestFleetEachDaemonHoldsItsOwnHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := fleetStore{driver: store.DriverPostgres, dsn: testenv.Postgres(t), dir: dir}
	hosts := []string{"host-a", "host-b", "host-c"}
	var ds []*fleetDaemon
	for _, h := range hosts {
		ds = append(ds, fleetStart(t, fs, h))
	}
	// Each host's daemon registers its host's work; one failed session
	// each puts an item in the queue. Three host-less shows: the
	// leader's.
	const perHost = 12
	for _, d := range ds {
		for i := range perHost {
			d.register(t, fmt.Sprintf(`{"type":"session","id":"%s-%02d","lifecycle":"running","host_id":%q}`, d.host, i, d.host))
		}
		if code, body := d.transition(t, "session", d.host+"-00", `{"to":"failed","reason":{"code":"run.failed.exit_nonzero","message":"exit 3"}}`); code != http.StatusOK {
			t.Fatalf("fail %s-00: %d %s", d.host, code, body)
		}
	}
	for i := range 3 {
		ds[i].register(t, fmt.Sprintf(`{"type":"show","id":"show-%d","lifecycle":"active"}`, i))
	}
	total := len(hosts)*perHost + 3

	// Each view holds what its daemon owns, no more.
	testenv.Eventually(t, "each view holds its own host's entities, the leader's the host-less ones too", rmtDeadline, func() (bool, string) {
		var got []string
		ok, leaders := true, 0
		for _, d := range ds {
			want := perHost
			if d.leads() {
				want += 3
				leaders++
			}
			n := d.viewEntities(t)
			ok = ok && n == want
			got = append(got, fmt.Sprintf("%s leads=%v holds %d (want %d)", d.host, d.leads(), n, want))
		}
		return ok && leaders == 1, strings.Join(got, "; ")
	})

	// Any daemon lists every host's entities, paginated, each once; and
	// for one host it agrees with that host's own daemon, which answers
	// from its view.
	var first []string
	for _, d := range ds {
		all := d.walk(t, "", 7)
		if len(all) != total {
			t.Errorf("%s lists %d entities, want %d", d.host, len(all), total)
		}
		if first == nil {
			first = all
		} else if !slices.Equal(all, first) {
			t.Errorf("%s's list differs from %s's:\n%v\n%v", d.host, ds[0].host, all, first)
		}
		for _, owner := range ds {
			mine, theirs := owner.walk(t, "host="+owner.host, 5), d.walk(t, "host="+owner.host, 5)
			if len(mine) != perHost || !slices.Equal(mine, theirs) {
				t.Errorf("host %s read by its own daemon and by %s:\n%v\n%v", owner.host, d.host, mine, theirs)
			}
		}
		// Another host's entity by its id.
		other := ds[(slices.Index(ds, d)+1)%len(ds)]
		if e := d.must(t, "session", other.host+"-00"); e.HostID != other.host || e.State.Lifecycle != "failed" {
			t.Errorf("%s reads %s-00 as %s on %q", d.host, other.host, e.State.Lifecycle, e.HostID)
		}
		// The page: another host's entity page, and every host's rows in
		// the table.
		if code, body := d.do(t, "GET", "/entities/session/"+other.host+"-00", ""); code != http.StatusOK || !strings.Contains(body, "run.failed.exit_nonzero") {
			t.Errorf("%s's page of %s-00: %d\n%s", d.host, other.host, code, body)
		}
		if code, body := d.do(t, "GET", "/", ""); code != http.StatusOK || !strings.Contains(body, "host-a-05") || !strings.Contains(body, "host-c-05") || !strings.Contains(body, "show-1") {
			t.Errorf("%s's page: %d, not every host's rows", d.host, code)
		}
		// The queue: every host's failure, and one host's by ?host=.
		if q := d.queue(t, ""); q.Total != len(hosts) {
			t.Errorf("%s's queue: %d items, want %d", d.host, q.Total, len(hosts))
		}
		if q := d.queue(t, "host="+other.host); q.Total != 1 || q.Items[0].Entity.ID != other.host+"-00" {
			t.Errorf("%s's queue of %s: %+v", d.host, other.host, q.Items)
		}
		// status --server, fleet-wide and for another host.
		r := rmtRun(t, dir, nil, "", "status", "--server", d.base)
		for _, h := range hosts {
			if r.code != 0 || !strings.Contains(r.stdout, h+"-11") {
				t.Errorf("status --server %s: exit %d, %s-11 missing:\n%s%s", d.host, r.code, h, r.stdout, r.stderr)
			}
		}
		r = rmtRun(t, dir, nil, "", "status", "--server", d.base, "--host", other.host)
		if r.code != 0 || strings.Count(r.stdout, other.host+"-") != perHost || strings.Contains(r.stdout, d.host+"-") {
			t.Errorf("status --server %s --host %s: exit %d\n%s%s", d.host, other.host, r.code, r.stdout, r.stderr)
		}
	}
}
