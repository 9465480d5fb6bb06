package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: any document is either a config that validates or one error
// (never a panic, never a config with an error, never an accepted config
// that Validate then refuses).
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("listen: 0.0.0.0:9715\n"))
	f.Add([]byte("reaper:\n  kill_users: [root, 1000, \"\"]\n"))
	f.Add([]byte("thresholds: {idle_after: 1h, stalled_after: 1m}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a config and an error: %v", err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("Parse returned an empty error")
			}
			return
		}
		if cfg == nil {
			t.Fatal("Parse returned neither a config nor an error")
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate refuses: %v", err)
		}
	})
}
