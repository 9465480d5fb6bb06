package wire

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLimitsTableIsTheCode: every row of the Limits table in
// docs/reference/http-api.md names a constant of this package and says
// its value; a limit changed on one side only fails here.
func TestLimitsTableIsTheCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/reference/http-api.md")
	if err != nil {
		t.Fatal(err)
	}
	code := map[string]int{
		"MaxBody": MaxBody, "MaxID": MaxID, "MaxLabel": MaxLabel, "MaxMessage": MaxMessage,
		"MaxEvidence": MaxEvidence, "MaxEvidenceField": MaxEvidenceField, "MaxReasonBytes": MaxReasonBytes,
		"MaxPath": MaxPath, "MaxListItems": MaxListItems, "MaxMetadata": MaxMetadata,
		"MaxMetadataDepth": MaxMetadataDepth, "MaxProgress": MaxProgress,
	}
	row := regexp.MustCompile("^\\| [^|]+ \\| (\\d+) [^|]*\\| `wire\\.(\\w+)` \\|$")
	seen := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		want, ok := code[m[2]]
		if !ok {
			t.Errorf("the table names wire.%s, which this test does not know: add it to the map", m[2])
			continue
		}
		got, _ := strconv.Atoi(m[1])
		if got != want {
			t.Errorf("the table says wire.%s is %d; the code says %d", m[2], got, want)
		}
		seen[m[2]] = true
	}
	for name := range code {
		if !seen[name] {
			t.Errorf("wire.%s has no row in the Limits table of docs/reference/http-api.md", name)
		}
	}
}
