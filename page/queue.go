package page

import (
	"cmp"
	"encoding/json"
	"time"

	"watchdog/attention"
	"watchdog/state"
)

type queueData struct {
	Total    int
	Sections []severitySection
	// More links to more of the queue, "" when all (or QueueLimit) are listed.
	More string
}

type severitySection struct {
	Severity string
	Count    int
	Clusters []clusterData
}

type clusterData struct {
	ID string
	// Todo is what to do about the cluster's one reason code.
	Todo todoData
	// Fingerprints (JSON) are exactly the items shown: none swept up unseen.
	Fingerprints string
	// Header speaks for all the cluster's items, never one item's message.
	Header string
	Items  []itemData
	items  []attention.Item
}

// Size is the number of the cluster's items on the page.
func (c clusterData) Size() int { return len(c.Items) }

// Collapsed reports whether the cluster starts folded: more than one item.
func (c clusterData) Collapsed() bool { return len(c.Items) > 1 }

type itemData struct {
	Fingerprint string
	Label       string
	Type        string
	Age         string
	Summary     string
	Status      string
	// Heartbeat is the item's heartbeat text, "" when its reason needs none.
	Heartbeat   string
	Href        string
	SnoozeBody  string
	DismissBody string
}

// buildQueue groups the items by severity, then by cluster in order of appearance.
func buildQueue(q attention.Queue, now time.Time, todo func(state.ReasonCode) todoData) queueData {
	out := queueData{Total: q.Total}
	for _, sev := range attention.Severities {
		sec := severitySection{Severity: string(sev), Count: q.BySeverity[sev]}
		index := map[string]int{}
		for i := range q.Items {
			it := &q.Items[i]
			if it.Severity != sev {
				continue
			}
			k, ok := index[it.ClusterID]
			if !ok {
				k = len(sec.Clusters)
				index[it.ClusterID] = k
				sec.Clusters = append(sec.Clusters, clusterData{ID: it.ClusterID})
			}
			sec.Clusters[k].Items = append(sec.Clusters[k].Items, itemOf(it, now))
			sec.Clusters[k].items = append(sec.Clusters[k].items, *it)
		}
		for k := range sec.Clusters {
			c := &sec.Clusters[k]
			c.Header = attention.ClusterOf(c.items).Header(now)
			c.Todo = todo(c.items[0].Reason.Code)
			fps := make([]string, len(c.items))
			for i := range c.items {
				fps[i] = c.items[i].Fingerprint
			}
			b, _ := json.Marshal(fps) // strings: cannot fail
			c.Fingerprints = string(b)
		}
		if len(sec.Clusters) > 0 {
			out.Sections = append(out.Sections, sec)
		}
	}
	return out
}

func itemOf(it *attention.Item, now time.Time) itemData {
	v := itemData{
		Fingerprint: it.Fingerprint, Label: cmp.Or(it.Entity.Label, it.Entity.Type+"/"+it.Entity.ID), Type: it.Entity.Type,
		Age: ago(now, it.FirstSeenAt.Time), Summary: it.Reason.Summary, Status: it.Status, Heartbeat: it.HeartbeatText(now),
		Href: entityHref(it.Entity.Type, it.Entity.ID),
	}
	for _, a := range it.Actions {
		body, _ := json.Marshal(a.Body) // strings and numbers: cannot fail
		switch a.ID {
		case "snooze":
			v.SnoozeBody = string(body)
		case "dismiss":
			v.DismissBody = string(body)
		}
	}
	return v
}
