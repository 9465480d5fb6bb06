package deploy

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"watchdog/config"
)

// readDoc is a file of the repository, relative to deploy/.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The example config and the config reference say the same of durations
// (issue 39: one said no "d"), and the config takes every example both
// give.
func TestDocsAgreeOnDurations(t *testing.T) {
	unit := regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ms|s|m|h|d)\b`)
	examples := func(path string) []string {
		for line := range strings.SplitSeq(readDoc(t, path), "\n") {
			if strings.Contains(line, "Durations are") {
				got := unit.FindAllString(line, -1)
				slices.Sort(got)
				return got
			}
		}
		t.Fatalf("%s does not say what durations are", path)
		return nil
	}
	example, reference := examples("config.example.yaml"), examples("../docs/reference/config.md")
	if !slices.Equal(example, reference) || !slices.ContainsFunc(example, func(s string) bool { return strings.HasSuffix(s, "d") }) {
		t.Errorf("the example config's durations %q, the reference's %q: want the same, days included", example, reference)
	}
	for _, d := range example {
		if _, err := config.Parse([]byte("thresholds:\n  failure_window: " + d + "\n")); err != nil {
			t.Errorf("a documented duration %s is refused: %v", d, err)
		}
	}
}

// The deploy README's scrape config and docs/security.md agree that
// /metrics takes no token (issue 39: the README asked for one); the
// daemon serving it without one is TestMetricNamesAreExported's scrape.
func TestDocsAgreeMetricsNeedNoToken(t *testing.T) {
	readme, security := readDoc(t, "README.md"), readDoc(t, "../docs/security.md")
	if !strings.Contains(readme, "/metrics needs no token") {
		t.Error("deploy/README.md does not say /metrics needs no token")
	}
	if !strings.Contains(security, "`/metrics`, `/healthz` and `/readyz` are always") {
		t.Error("docs/security.md does not say /metrics is always open")
	}
	scrape := readme[strings.Index(readme, "scrape_configs:"):]
	scrape = scrape[:strings.Index(scrape, "```")]
	for _, bad := range []string{"authorization:", "bearer_token", "credentials_file"} {
		if strings.Contains(scrape, bad) {
			t.Errorf("deploy/README.md's scrape config asks for a token (%s)", bad)
		}
	}
}
