package state

import (
	"fmt"
	"slices"
	"strings"
)

// ParseSeverities reads a comma-separated list of severities, each one of
// among, once; a blank list is nil. Every list a user writes is read here.
func ParseSeverities(s string, among []Severity) ([]Severity, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Severity
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		sev, ok := ParseSeverity(p)
		if !ok || !slices.Contains(among, sev) {
			names := make([]string, len(among))
			for i, a := range among {
				names[i] = string(a)
			}
			return nil, fmt.Errorf("%q is not one of %s", p, strings.Join(names, ", "))
		}
		if !slices.Contains(out, sev) {
			out = append(out, sev)
		}
	}
	return out, nil
}
