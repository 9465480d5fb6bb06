package wire

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrAmbiguousHost is returned by ResolveHost for a name several hosts bear.
var ErrAmbiguousHost = errors.New("ambiguous host name")

// ResolveHost is the host id a --host or ?host= value means: an id as given
// (or any value not recorded as a name), else the one host whose hostname
// is v, exactly and then by short form, case aside.
func ResolveHost(v string, names map[string]string) (string, error) {
	if v == "" {
		return "", nil
	}
	if _, ok := names[v]; ok {
		return v, nil
	}
	for _, short := range []bool{false, true} {
		var ids []string
		for id, name := range names {
			if short {
				name, _, _ = strings.Cut(name, ".")
			}
			if name != "" && strings.EqualFold(name, v) {
				ids = append(ids, id)
			}
		}
		switch len(ids) {
		case 0:
			continue
		case 1:
			return ids[0], nil
		}
		sort.Strings(ids)
		return "", fmt.Errorf("%w %q: %d hosts bear it, give one of their ids: %s", ErrAmbiguousHost, v, len(ids), strings.Join(ids, ", "))
	}
	return v, nil
}

// NameHosts sets each item's HostName from names (host id → hostname).
func NameHosts(items []Entity, names map[string]string) {
	if len(names) == 0 {
		return
	}
	for i := range items {
		items[i].HostName = names[items[i].HostID]
	}
}
