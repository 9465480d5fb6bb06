package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"watchdog/config"
)

// TestLoggerJournalPriority: with stderr the journal's stream (as
// JOURNAL_STREAM names it), each line starts with its syslog priority;
// with the variable absent or naming another stream, lines are unchanged.
func TestLoggerJournalPriority(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		for _, c := range []struct {
			name   string
			stream func(f *os.File) string
			prefix map[string]string // message → line prefix
		}{
			{"journal", devIno, map[string]string{"i": "<6>", "w": "<4>", "e": "<3>"}},
			{"not set", func(*os.File) string { return "" }, nil},
			{"another stream", func(f *os.File) string { return devIno(f) + "1" }, nil},
			{"malformed", func(*os.File) string { return "journal" }, nil},
		} {
			t.Run(format+"/"+c.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "stderr")
				f, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				t.Setenv("JOURNAL_STREAM", c.stream(f))
				log, _, err := newLogger(config.Log{Level: "info", Format: format}, f, path)
				if err != nil {
					t.Fatal(err)
				}
				log.Info("i")
				log.Warn("w")
				log.Error("e")
				_ = log.Sync()
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.Split(strings.TrimSpace(string(b)), "\n")
				if len(lines) != 3 {
					t.Fatalf("want 3 lines, got %q", b)
				}
				for i, msg := range []string{"i", "w", "e"} {
					want := c.prefix[msg]
					if want != "" && !strings.HasPrefix(lines[i], want) {
						t.Errorf("line %q does not start with %s", lines[i], want)
					}
					if want == "" && strings.HasPrefix(lines[i], "<") {
						t.Errorf("line %q has a priority prefix outside the journal", lines[i])
					}
					if format == "json" && !strings.HasPrefix(strings.TrimPrefix(lines[i], want), "{") {
						t.Errorf("line %q is not the JSON entry after its prefix", lines[i])
					}
				}
			})
		}
	}
}

// devIno is f's "<device>:<inode>", as systemd writes JOURNAL_STREAM.
func devIno(f *os.File) string {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "0:0"
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
