package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decode decodes one YAML document onto the defaults, then validates it,
// returning the configuration as far as it decoded (nil only when not YAML)
// and every problem. It walks the nodes itself rather than use yaml.v3's
// strict mode, whose errors name neither the key's path nor a fix.
func decode(data []byte) (*Config, error) {
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	c := Default()
	d := &decoder{merging: map[*yaml.Node]bool{}}
	if root != nil {
		d.value(root, reflect.ValueOf(c).Elem(), "")
	}
	errs := append(d.problems, c.Validate())
	return c, errors.Join(errs...)
}

// parseDocument returns the one document of data, or nil when there is
// none. Syntax errors are yaml.v3's own, line numbers included.
func parseDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, fmt.Errorf("line %d: more than one YAML document (a config file holds one)", next.Line)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
		return nil, nil
	}
	return doc.Content[0], nil
}

// decoder collects the problems of one walk.
type decoder struct {
	problems []error
	// merging holds the mappings being walked: a merge (<<) back into one
	// would never end.
	merging map[*yaml.Node]bool
	// mappings counts the mappings walked: merges through aliases could
	// multiply them without bound (a billion laughs).
	mappings int
}

// maxMappings bounds a walk; a real config has a dozen mappings.
const maxMappings = 1000

func (d *decoder) fail(format string, args ...any) {
	d.problems = append(d.problems, fmt.Errorf(format, args...))
}

// scalarDecoder is a field type that reads a scalar form itself: Duration,
// and Auth (`none` or `token`).
type scalarDecoder interface {
	decodeScalar(n *yaml.Node) error
}

// value decodes n onto v, the field at the dotted key path ("" is the
// whole Config). A null keeps v's default.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		return
	}
	where := path
	if path == "" {
		where = fmt.Sprintf("line %d: top level", n.Line)
	}
	switch sd, custom := v.Addr().Interface().(scalarDecoder); {
	case v.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		d.mapping(n, v, path)
	case custom:
		if err := sd.decodeScalar(n); err != nil {
			d.fail("%s: %w", where, err)
		}
	case v.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.fail("%s: %s is not a list", where, describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, el := range n.Content {
			d.value(el, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	default:
		// yaml.v3 reads the scalar, but would truncate 1.5 to an int.
		bad := n.Kind != yaml.ScalarNode || v.Kind() == reflect.Struct ||
			(v.Kind() == reflect.Int && n.ShortTag() == "!!float") ||
			n.Decode(v.Addr().Interface()) != nil
		if bad {
			d.fail("%s: %s is not %s", where, describe(n), want(v.Kind()))
		}
	}
}

// mapping decodes the mapping n onto the struct v at path; an unknown or
// repeated key is a problem. Merges (<<) go first, so n's own keys win.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if d.merging[n] {
		d.fail("line %d: %s merges itself (<<)", n.Line, orTop(path))
		return
	}
	if d.mappings++; d.mappings > maxMappings {
		if d.mappings == maxMappings+1 {
			d.fail("line %d: more than %d mappings, through aliases and merges (<<)", n.Line, maxMappings)
		}
		return
	}
	d.merging[n] = true
	defer delete(d.merging, n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.ShortTag() == "!!merge" {
			d.merge(k, n.Content[i+1], v, path)
		}
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			continue
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if line, dup := first[k.Value]; dup {
			d.fail("line %d: duplicate key %q (first at line %d)", k.Line, p, line)
			continue
		}
		first[k.Value] = k.Line
		f, ok := fieldByKey(v, k.Value)
		if !ok {
			msg := fmt.Sprintf("line %d: unknown key %q", k.Line, p)
			if alt := suggestKey(p); alt != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", alt)
			}
			d.problems = append(d.problems, errors.New(msg))
			continue
		}
		d.value(val, f, p)
	}
}

// merge decodes the value of a merge key: a mapping, or a list of them.
func (d *decoder) merge(k, n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	sources := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		sources = n.Content
	}
	for _, m := range sources {
		if m.Kind == yaml.AliasNode {
			m = m.Alias
		}
		if m.Kind != yaml.MappingNode {
			d.fail("line %d: %s: << merges %s, not a mapping", k.Line, orTop(path), describe(m))
			continue
		}
		d.mapping(m, v, path)
	}
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func fieldByKey(v reflect.Value, key string) (reflect.Value, bool) {
	if i := fieldIndex(v.Type(), key); i >= 0 {
		return v.Field(i), true
	}
	return reflect.Value{}, false
}

// fieldIndex returns the index of t's field whose yaml key is key, or -1.
func fieldIndex(t reflect.Type, key string) int {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return i
		}
	}
	return -1
}

// describe names what a node holds: its quoted text, "a list" or "a mapping".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return strconv.Quote(n.Value)
}

func want(k reflect.Kind) string {
	switch k {
	case reflect.Int:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a mapping" // the sections: config.Config and its structs
}

// suggestKey returns the known key closest to the unknown dotted path, or
// "" when none is a likely typo.
func suggestKey(path string) string {
	parent, typo := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parent, typo = path[:i], path[i+1:]
	}
	t := typeAt(parent)
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	typo = strings.ToLower(typo)
	best, bestDist := "", min(2, len(typo)/3)+1 // a typo: one edit in three letters, two at most
	for i := range t.NumField() {
		key := yamlKey(t.Field(i))
		if d := editDistance(typo, key); d < bestDist {
			best, bestDist = key, d
		}
	}
	if best == "" || parent == "" {
		return best
	}
	return parent + "." + best
}

// typeAt returns the Go type at the dotted key path, or nil if none.
func typeAt(path string) reflect.Type {
	t := reflect.TypeFor[Config]()
	if path == "" {
		return t
	}
	for key := range strings.SplitSeq(path, ".") {
		if t.Kind() != reflect.Struct {
			return nil
		}
		i := fieldIndex(t, key)
		if i < 0 {
			return nil
		}
		t = t.Field(i).Type
	}
	return t
}

func yamlKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return key
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
