package wire

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrAmbiguousHost is returned by ResolveHost for a name that several
// hosts' daemons recorded.
var ErrAmbiguousHost = errors.New("ambiguous host name")

// ResolveHost is the host id a --host or ?host= value means: an id as
// given (a key of names, or any value no daemon recorded as a name, so
// an id with no daemon, e.g. one exec recorded, still selects), else the
// one host whose recorded hostname is v, first exactly and then by its
// short form ("web-1" for "web-1.example.org"), case aside. A name that
// several hosts bear is an error listing their ids: the caller picks one.
// names maps host ids to the hostnames their daemons recorded.
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
