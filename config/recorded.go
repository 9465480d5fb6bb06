package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// ThresholdsYAML is the thresholds section as YAML, every key written: what
// a daemon records in its store for the commands judging the same database.
func (t Thresholds) ThresholdsYAML() (string, error) {
	b, err := yaml.Marshal(struct {
		Thresholds Thresholds `yaml:"thresholds"`
	}{t})
	if err != nil {
		return "", fmt.Errorf("write the thresholds: %w", err)
	}
	return string(b), nil
}

// ParseThresholds reads a recorded thresholds section back, validated.
func ParseThresholds(doc string) (Thresholds, error) {
	c, err := Parse([]byte(doc))
	if err != nil {
		return Thresholds{}, err
	}
	if errs := c.Thresholds.validate(); len(errs) > 0 {
		return Thresholds{}, errs[0]
	}
	return c.Thresholds, nil
}

// ThresholdsDiff names the keys whose values differ between a and b, each
// as "key a≠b" ("idle_after 5m≠10m"), in the section's order.
func ThresholdsDiff(a, b Thresholds) []string {
	ya, errA := a.ThresholdsYAML()
	yb, errB := b.ThresholdsYAML()
	if errA != nil || errB != nil || ya == yb {
		return nil
	}
	var ma, mb yaml.Node
	if yaml.Unmarshal([]byte(ya), &ma) != nil || yaml.Unmarshal([]byte(yb), &mb) != nil {
		return nil
	}
	ka, kb := ma.Content[0].Content[1].Content, mb.Content[0].Content[1].Content
	var out []string
	for i := 0; i+1 < len(ka) && i+1 < len(kb); i += 2 {
		va, vb := flat(ka[i+1]), flat(kb[i+1])
		if va != vb {
			out = append(out, fmt.Sprintf("%s %s≠%s", ka[i].Value, va, vb))
		}
	}
	return out
}

func flat(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	s := "["
	for i, c := range n.Content {
		if i > 0 {
			s += ", "
		}
		s += flat(c)
	}
	return s + "]"
}
