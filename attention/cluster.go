package attention

import (
	"strconv"
	"strings"
	"time"

	"watchdog/state"
)

// ClusterNames is how many entities a cluster's header names before it
// counts the rest ("+N").
const ClusterNames = 3

// Cluster is what a cluster's header says: it speaks for all its items,
// so it carries only what they share (the reason code and its registered
// summary) and what spans them (their count, the range of their onsets,
// their entities). One item's own detail (its pid, its signal, its
// message) stays on that item's line: a header that quoted the first
// item's "killed by SIGTERM" would misstate the others.
type Cluster struct {
	Code state.ReasonCode
	// Size counts the cluster's items in the whole selected queue
	// (Item.ClusterSize), which may be more than the items listed.
	Size int
	// Title is the code's registered summary (its doc line), never one
	// item's message.
	Title string
	// First and Last are the earliest and the latest onset
	// (first_seen_at) of the items listed.
	First, Last time.Time
	// Names are the first ClusterNames entities listed, TYPE/ID (unique,
	// where labels need not be); More counts the rest of Size.
	Names []string
	More  int
}

// ClusterOf is the header of a cluster whose listed items are items (at
// least one, all of one cluster).
func ClusterOf(items []Item) Cluster {
	c := Cluster{Code: items[0].Reason.Code, Size: max(items[0].ClusterSize, len(items)), Title: Title(items[0].Reason.Code)}
	for _, it := range items {
		at := it.FirstSeenAt.Time
		if c.First.IsZero() || at.Before(c.First) {
			c.First = at
		}
		if at.After(c.Last) {
			c.Last = at
		}
		if len(c.Names) < ClusterNames {
			c.Names = append(c.Names, it.Entity.Type+"/"+it.Entity.ID)
		}
	}
	c.More = c.Size - len(c.Names)
	return c
}

// Title is a reason code's registered summary, as a header or an item
// with no message of its own reads it: "The recorded process is
// conclusively gone".
func Title(code state.ReasonCode) string { return summaryOf(code, "") }

// Onsets is the range of the items' onsets: "first 17:56:05Z, last
// 18:02:11Z", or "since 17:56:05Z" when they all began at once. Times of
// another day than now carry their date.
func (c Cluster) Onsets(now time.Time) string {
	if c.First.Equal(c.Last) {
		return "since " + clock(c.First, now)
	}
	return "first " + clock(c.First, now) + ", last " + clock(c.Last, now)
}

// Entities names the cluster's entities: "session/s-1, session/s-2,
// session/s-3 +4".
func (c Cluster) Entities() string {
	s := strings.Join(c.Names, ", ")
	if c.More > 0 {
		s += " +" + strconv.Itoa(c.More)
	}
	return s
}

// Header is the header's text after the count: the title, the onsets and
// the entities, " · " between them.
func (c Cluster) Header(now time.Time) string {
	return c.Title + " · " + c.Onsets(now) + " · " + c.Entities()
}

// clock is t as a header shows it: the time of day (UTC) when t is of
// now's day, else the whole stamp.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format("15:04:05Z")
	}
	return t.Format(state.StampLayout)
}
