package state

import (
	"fmt"
	"strings"
)

// Artifact kinds of the artifact contract.
const (
	ArtifactFile = "file"
	ArtifactDir  = "dir"
	ArtifactJSON = "json"
)

// ArtifactSpec is one expected output of an entity (the artifact contract
// of ADR-0029): a path or glob relative to the entity's artifacts root.
type ArtifactSpec struct {
	Path string `json:"path" yaml:"path"`
	// Required defaults to true when absent from the wire (see wire).
	Required       bool   `json:"required" yaml:"required"`
	MinBytes       int64  `json:"min_bytes,omitempty" yaml:"min_bytes"`
	Kind           string `json:"kind,omitempty" yaml:"kind"`
	NewerThanStart bool   `json:"newer_than_start,omitempty" yaml:"newer_than_start"`
}

// Validate checks the fields a person can get wrong. It does not touch the
// file system: whether a path escapes the root is the probe's judgement,
// and such an artifact is `invalid`, not a registration error.
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
