package attention

import (
	"strconv"
	"strings"
	"time"

	"watchdog/state"
)

// ClusterNames is how many entities a cluster's header names before "+N".
const ClusterNames = 3

// Cluster is what a cluster's header says: only what its items share or
// span, never one item's detail, which would misstate the others.
type Cluster struct {
	Code state.ReasonCode
	// Size counts the cluster's items in the whole selected queue.
	Size int
	// Title is the code's registered summary, never one item's message.
	Title string
	// First and Last are the earliest and latest onsets listed.
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

// Title is a reason code's registered summary, for a header or an item
// with no message of its own.
func Title(code state.ReasonCode) string { return summaryOf(code, "") }

// Onsets is the range of the items' onsets ("first …, last …", or "since
// …"); times of another day carry their date.
func (c Cluster) Onsets(now time.Time) string {
	if c.First.Equal(c.Last) {
		return "since " + clock(c.First, now)
	}
	return "first " + clock(c.First, now) + ", last " + clock(c.Last, now)
}

// Entities names the cluster's entities, "+N" for the rest.
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

// clock is t as a header shows it: time of day (UTC) on now's day, else
// the whole stamp.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if y, m, d := t.Date(); now.Year() == y && now.Month() == m && now.Day() == d {
		return t.Format("15:04:05Z")
	}
	return t.Format(state.StampLayout)
}
