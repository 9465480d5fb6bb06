package state

import (
	"reflect"
	"testing"
)

func TestParseSeverities(t *testing.T) {
	attention := []Severity{SeverityCritical, SeverityWarning, SeverityInfo}
	for _, tc := range []struct {
		in    string
		among []Severity
		want  []Severity
		err   string
	}{
		{"", Severities, nil, ""},
		{"  ", Severities, nil, ""},
		{"critical", Severities, []Severity{SeverityCritical}, ""},
		{" warning , critical,warning", Severities, []Severity{SeverityWarning, SeverityCritical}, ""},
		{"neutral", Severities, []Severity{SeverityNeutral}, ""},
		// Failure cases
		{"neutral", attention, nil, `"neutral" is not one of critical, warning, info`},
		{"critical,bogus", Severities, nil, `"bogus" is not one of critical, warning, info, neutral`},
		{"critical,,", Severities, nil, `"" is not one of critical, warning, info, neutral`},
	} {
		got, err := ParseSeverities(tc.in, tc.among)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseSeverities(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSeverities(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
