package state

import (
	"fmt"
	"strings"
	"time"
)

// Artifact kinds of the artifact contract.
const (
	ArtifactFile = "file"
	ArtifactDir  = "dir"
	ArtifactJSON = "json"
)

// ArtifactSpec is one expected output of an entity: a path or glob
// relative to its artifacts root.
type ArtifactSpec struct {
	Path string `json:"path" yaml:"path"`
	// Required defaults to true when absent from the wire (see wire).
	Required       bool   `json:"required" yaml:"required"`
	MinBytes       int64  `json:"min_bytes,omitempty" yaml:"min_bytes"`
	Kind           string `json:"kind,omitempty" yaml:"kind"`
	NewerThanStart bool   `json:"newer_than_start,omitempty" yaml:"newer_than_start"`
}

// Validate checks the fields a person can get wrong, without the file
// system: a path escaping the root is the probe's `invalid`, not an error.
func (a ArtifactSpec) Validate() error {
	if strings.TrimSpace(a.Path) == "" {
		return fmt.Errorf("artifact path is empty")
	}
	switch a.Kind {
	case "", ArtifactFile, ArtifactDir, ArtifactJSON:
	default:
		return fmt.Errorf("artifact %q: kind %q is not one of file, dir, json", a.Path, a.Kind)
	}
	if a.MinBytes < 0 {
		return fmt.Errorf("artifact %q: min_bytes %d is negative", a.Path, a.MinBytes)
	}
	return nil
}

// Limits of the artifact contract (ADR-0010). Registration refuses a
// contract over the first four; the probe enforces all on every check, so
// a contract stored any other way is bounded too (run.delivery.check_stopped).
const (
	// MaxArtifacts is the most artifacts one contract may declare.
	MaxArtifacts = 100
	// MaxArtifactPathBytes bounds the length of one artifact path or glob.
	MaxArtifactPathBytes = 1024
	// MaxArtifactPathSegments bounds how deep below the root a check looks.
	MaxArtifactPathSegments = 16
	// MaxArtifactGlobSegments bounds wildcard components: each multiplies
	// the directories a check lists.
	MaxArtifactGlobSegments = 4
	// MaxArtifactEntries bounds the entries one entity's check reads.
	MaxArtifactEntries = 10000
	// MaxArtifactCheckTime bounds the wall time of one entity's check.
	MaxArtifactCheckTime = 200 * time.Millisecond
)

// ArtifactGlobMeta are the characters that make an artifact path a glob.
const ArtifactGlobMeta = `*?[\`

// PathShape counts the components of an artifact path as a check walks
// it, and those holding a glob meta character.
func PathShape(path string) (segments, wildcards int) {
	start, wild := 0, false
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			if seg := path[start:i]; seg != "" && seg != "." {
				segments++
				if wild {
					wildcards++
				}
			}
			start, wild = i+1, false
			continue
		}
		if strings.IndexByte(ArtifactGlobMeta, path[i]) >= 0 {
			wild = true
		}
	}
	return segments, wildcards
}

// ValidateContract refuses a contract beyond the limits above, naming the
// limit.
func ValidateContract(specs []ArtifactSpec) error {
	if len(specs) > MaxArtifacts {
		return fmt.Errorf("%d artifacts: the limit is %d per contract", len(specs), MaxArtifacts)
	}
	for i, a := range specs {
		if len(a.Path) > MaxArtifactPathBytes {
			return fmt.Errorf("artifacts[%d]: path is %d bytes long, the limit is %d", i, len(a.Path), MaxArtifactPathBytes)
		}
		segs, wild := PathShape(a.Path)
		if segs > MaxArtifactPathSegments {
			return fmt.Errorf("artifacts[%d] %q: %d path components, the limit is %d", i, a.Path, segs, MaxArtifactPathSegments)
		}
		if wild > MaxArtifactGlobSegments {
			return fmt.Errorf("artifacts[%d] %q: %d components with wildcards, the limit is %d", i, a.Path, wild, MaxArtifactGlobSegments)
		}
	}
	return nil
}

// EffectiveKind is Kind with the default (file) applied.
func (a ArtifactSpec) EffectiveKind() string {
	if a.Kind == "" {
		return ArtifactFile
	}
	return a.Kind
}

// ContractSubject names the one required artifact of a contract for the
// display chain ("review.md"), or "" when there are zero or several.
func ContractSubject(specs []ArtifactSpec) string {
	subject := ""
	for _, a := range specs {
		if !a.Required {
			continue
		}
		if subject != "" {
			return ""
		}
		subject = a.Path
		if i := strings.LastIndexByte(subject, '/'); i >= 0 {
			subject = subject[i+1:]
		}
	}
	return subject
}
