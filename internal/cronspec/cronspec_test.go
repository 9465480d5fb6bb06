package cronspec

import "testing"

// TestParser was config's TestCronParser: the parser moved here, its
// assertions with it.
func TestParser(t *testing.T) {
	for _, spec := range []string{"@every 15s", "@daily", "@hourly", "*/5 * * * *", "0 3 * * 1-5", "CRON_TZ=UTC 0 3 * * *"} {
		if _, err := Parser.Parse(spec); err != nil {
			t.Errorf("Parser.Parse(%q): %v", spec, err)
		}
	}
	for _, spec := range []string{"", "every 15s", "0 */5 * * * *", "@nightly", "@every -5s", "@every 0s", "@every 1ns", "@every 999ms", "@every 1.5s"} {
		if _, err := Parser.Parse(spec); err == nil {
			t.Errorf("Parser.Parse(%q) succeeded, want an error", spec)
		}
	}
}
