package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"watchdog/internal/testenv"
)

// TestServeDropsAgedOutEntities: the daemon's view leaves out the ended
// entities once they age out of the failure window (ADR-0060:
// watchdog_view_entities falls to the open ones), yet every read still
// shows them as before: each one's GET, the list walked page by page, the
// gauges that count every entity, the page's table; and the queue, as
// before, no longer has their items.
func TestServeDropsAgedOutEntities(t *testing.T) {
	t.Parallel()
	dir, db, _ := svSetup(t, svConfig{})
	cfg := writeFile(t, dir, "config.yaml", strings.Replace(svConfig{}.yaml(db), "thresholds:\n", "thresholds:\n  failure_window: 3s\n", 1))
	d := svStart(t, cfg, db)
	for i := range 4 {
		svRegister(t, db, fmt.Sprintf(`{"type":"session","id":"s%d","lifecycle":"running"}`, i))
	}
	for i := range 3 {
		svTransition(t, db, fmt.Sprintf("session/s%d", i), "failed", "--actor", "orchestrator", "--reason", "run.failed.exit_nonzero")
	}
	testenv.Eventually(t, "the view holds only the open session", svDeadline, func() (bool, string) {
		n := d.metric("watchdog_view_entities")
		return n == 1, fmt.Sprintf("watchdog_view_entities %v", n)
	})
	for i := range 3 {
		if e := d.entity("session", fmt.Sprintf("s%d", i)); e.lifecycle() != "failed" {
			t.Errorf("s%d aged out reads %s", i, e)
		}
	}
	seen := map[string]bool{}
	path := "/api/v1/entities?limit=3"
	for pages := 0; path != ""; pages++ {
		var l struct {
			Total int `json:"total"`
			Items []struct {
				ID string `json:"id"`
			} `json:"items"`
			Next string `json:"next"`
		}
		resp, err := svHTTP.Get(d.base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := json.Unmarshal(b, &l); err != nil || l.Total != 4 {
			t.Fatalf("GET %s: total %d (%v): %s", path, l.Total, err, b)
		}
		for _, it := range l.Items {
			seen[it.ID] = true
		}
		path = ""
		if l.Next != "" {
			path = "/api/v1/entities?limit=3&after=" + url.QueryEscape(l.Next)
		}
		if pages > 5 {
			t.Fatal("the walk does not end")
		}
	}
	if len(seen) != 4 {
		t.Errorf("the list walked %v, want s0-s3", seen)
	}
	// Every entity still counted by the gauges that count every entity.
	resp, err := svHTTP.Get(d.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "watchdog_entities{") {
			v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			total += v
		}
	}
	resp.Body.Close()
	if total != 4 {
		t.Errorf("watchdog_entities sums to %v, want 4", total)
	}
	for _, p := range []string{"/", "/entities/session/s0"} {
		resp, err := svHTTP.Get(d.base + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "s0") {
			t.Errorf("GET %s: %d, s0 missing", p, resp.StatusCode)
		}
	}
	resp, err = svHTTP.Get(d.base + "/api/attention")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), `"s0"`) {
		t.Errorf("the queue still has an aged-out session: %s", b)
	}
}
