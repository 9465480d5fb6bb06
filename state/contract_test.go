package state

import (
	"strings"
	"testing"
)

func TestPathShape(t *testing.T) {
	for _, tc := range []struct {
		path       string
		segs, wild int
	}{
		{"review.md", 1, 0},
		{"a/b/c.json", 3, 0},
		{"./a//b/", 2, 0},
		{"reports/*.md", 2, 1},
		{"*/*/x", 3, 2},
		{`a/[b]/c?/d\e`, 4, 3},
		{"", 0, 0},
		{strings.Repeat("*/", 30) + "x", 31, 30},
	} {
		if segs, wild := PathShape(tc.path); segs != tc.segs || wild != tc.wild {
			t.Errorf("PathShape(%q) = %d, %d; want %d, %d", tc.path, segs, wild, tc.segs, tc.wild)
		}
	}
}

func TestValidateContract(t *testing.T) {
	many := func(n int) []ArtifactSpec {
		out := make([]ArtifactSpec, n)
		for i := range out {
			out[i] = ArtifactSpec{Path: "x.md"}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		specs []ArtifactSpec
		err   string // substring; "" = accepted
	}{
		// Success cases: at the limits.
		{"none", nil, ""},
		{"as many artifacts as allowed", many(MaxArtifacts), ""},
		{"as deep as allowed", []ArtifactSpec{{Path: strings.Repeat("d/", MaxArtifactPathSegments-1) + "x"}}, ""},
		{"as many wildcards as allowed", []ArtifactSpec{{Path: strings.Repeat("*/", MaxArtifactGlobSegments-1) + "*.md"}}, ""},
		{"as long as allowed", []ArtifactSpec{{Path: strings.Repeat("a", MaxArtifactPathBytes)}}, ""},

		// Failure cases: one over, the limit named.
		{"too many artifacts", many(MaxArtifacts + 1), "101 artifacts: the limit is 100 per contract"},
		{"too deep", []ArtifactSpec{{Path: strings.Repeat("d/", MaxArtifactPathSegments) + "x"}}, "17 path components, the limit is 16"},
		{"the poison glob", []ArtifactSpec{{Path: "ok.md"}, {Path: strings.Repeat("*/", 30) + "x"}}, "artifacts[1]"},
		{"too many wildcards", []ArtifactSpec{{Path: "*/*/*/*/*/*/nomatch"}}, "6 components with wildcards, the limit is 4"},
		{"too long", []ArtifactSpec{{Path: strings.Repeat("a", MaxArtifactPathBytes+1)}}, "1025 bytes long, the limit is 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateContract(tc.specs)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("got %v, want an error saying %q", err, tc.err)
			}
		})
	}
}
