package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"watchdog/state"
	"watchdog/unixtime"
)

// SummaryGroup is a set of entities that look the same to the scrape-time
// metrics: same type and stored dimensions, same reason codes, and on the
// same side of the failure window. Metrics need counts, not rows, so the
// store hands them groups.
type SummaryGroup struct {
	Type string
	// Lifecycle is "" for legacy entities (Legacy is then true).
	Lifecycle string
	Legacy    bool
	Health    state.Health
	Delivery  state.Delivery
	// Recent reports that the entities reached their current state (ended_at,
	// else lifecycle_at, else updated_at) at or after the since time the
	// query was given: for an entity with an outcome, "still inside the
	// failure window" when since is attention.Since (the rule is
	// attention.AgedOut's).
	Recent bool
	// TransitionCode is the code of the reason of the transition that
	// brought the entities to their lifecycle ("" when it had none).
	TransitionCode state.ReasonCode
	// ReasonCodes are the codes of the probe's current findings.
	ReasonCodes []state.ReasonCode
	// Count is how many entities the group holds (at least 1).
	Count int
}

// groupSep joins the fixed fields of a row into one text column. SQLite
// under this pure-Go driver spends most of a large read on per-column
// calls, so the query hands over one column per row (plus two that are
// usually NULL), and Go groups the rows by that key. No vocabulary value
// contains the ASCII unit separator.
const groupSep = "\x1f"

// summaryGroupsQuery reads one key column per entity, the transition
// reason's code only where there is one (json_extract, not the whole
// document with its evidence), and the probe's reasons only where they
// are not the common "[]". The sixth key field is "not aged out":
// attention.AgedOut's rule, with its cut-off (attention.Since) as the
// parameter, as in AttentionCandidates and DismissedSummaries.
const summaryGroupsQuery = `SELECT
	type || char(31) || IFNULL(lifecycle, '') || char(31) || (lifecycle IS NULL) || char(31) ||
	health || char(31) || delivery || char(31) || (COALESCE(ended_at, lifecycle_at, updated_at) >= ?),
	CASE WHEN transition_reason IS NULL THEN NULL ELSE json_extract(transition_reason, '$.code') END,
	CASE WHEN reasons = '[]' THEN NULL ELSE reasons END
	FROM entities`

// SummaryGroups reads every entity (legacy ones included) in one query and
// calls fn once per group, in no particular order. since decides each
// group's Recent flag. A row that does not decode stops the walk with an
// error: a scrape must not report partial counts as whole.
func (s *SQLite) SummaryGroups(ctx context.Context, since time.Time, fn func(SummaryGroup)) error {
	st, err := s.prepared(ctx, summaryGroupsQuery)
	if err != nil {
		return fmt.Errorf("summarize entities: %w", err)
	}
	rows, err := st.QueryContext(ctx, unixtime.Seconds(since))
	if err != nil {
		return fmt.Errorf("summarize entities: %w", err)
	}
	defer rows.Close()
	counts := map[string]int{}
	var (
		key     string
		tcode   sql.NullString
		reasons sql.RawBytes
		codes   []state.ReasonCode
		b       strings.Builder
	)
	for rows.Next() {
		if err := rows.Scan(&key, &tcode, &reasons); err != nil {
			return fmt.Errorf("summarize entities: %w", err)
		}
		if !tcode.Valid && reasons == nil {
			counts[key]++
			continue
		}
		// Rarer rows: extend the key with the codes (never the messages,
		// which differ between otherwise identical entities).
		codes = codes[:0]
		if reasons != nil {
			if codes, err = decodeCodes(reasons, codes); err != nil {
				return fmt.Errorf("summarize entities: %w", err)
			}
		}
		b.Reset()
		b.WriteString(key)
		b.WriteString(groupSep)
		b.WriteString(tcode.String)
		for _, c := range codes {
			b.WriteString(groupSep)
			b.WriteString(string(c))
		}
		counts[b.String()]++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("summarize entities: %w", err)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable order makes scrapes and tests repeatable
	for _, k := range keys {
		g, err := parseGroupKey(k)
		if err != nil {
			return fmt.Errorf("summarize entities: %w", err)
		}
		g.Count = counts[k]
		fn(g)
	}
	return nil
}

func parseGroupKey(k string) (SummaryGroup, error) {
	parts := strings.Split(k, groupSep)
	if len(parts) < 6 {
		return SummaryGroup{}, fmt.Errorf("entity row %q does not split into type, lifecycle, health, delivery", k)
	}
	g := SummaryGroup{
		Type: parts[0], Lifecycle: parts[1], Legacy: parts[2] == "1",
		Health: state.Health(parts[3]), Delivery: state.Delivery(parts[4]), Recent: parts[5] == "1",
	}
	if len(parts) > 6 {
		g.TransitionCode = state.ReasonCode(parts[6])
		for _, c := range parts[7:] {
			g.ReasonCodes = append(g.ReasonCodes, state.ReasonCode(c))
		}
	}
	return g, nil
}

// decodeCodes appends the codes of a JSON []StateReason to dst.
func decodeCodes(raw []byte, dst []state.ReasonCode) ([]state.ReasonCode, error) {
	var rs []struct {
		Code state.ReasonCode `json:"code"`
	}
	if err := json.Unmarshal(raw, &rs); err != nil {
		return dst, fmt.Errorf("decode reasons %.40q: %w", raw, err)
	}
	for _, r := range rs {
		dst = append(dst, r.Code)
	}
	return dst, nil
}

// DismissedSummary is a dismissal with the current summary of its entity
// (Count 1), for metrics that must leave out what dismissals hide.
type DismissedSummary struct {
	Dismissal Dismissal
	Entity    SummaryGroup
}

// DismissedSummaries reads every dismissal whose entity exists, with that
// entity's summary; since is as for SummaryGroups. Dismissals of vanished
// entities hide nothing and are left out.
func (s *SQLite) DismissedSummaries(ctx context.Context, since time.Time) ([]DismissedSummary, error) {
	st, err := s.prepared(ctx, `SELECT d.id, d.fingerprint, d.entity_type, d.entity_id, d.reason_code, d.status_at_dismissal,
		d.snoozed_until, d.dismissed_at, d.dismissed_by, d.clear_on_status_change, d.created_at,
		IFNULL(e.lifecycle, ''), e.lifecycle IS NULL, e.health, e.delivery,
		COALESCE(e.ended_at, e.lifecycle_at, e.updated_at) >= ?,
		IFNULL(json_extract(e.transition_reason, '$.code'), ''), e.reasons
		FROM attention_dismissals d JOIN entities e ON e.type = d.entity_type AND e.id = d.entity_id`)
	if err != nil {
		return nil, fmt.Errorf("read dismissed entities: %w", err)
	}
	rows, err := st.QueryContext(ctx, unixtime.Seconds(since))
	if err != nil {
		return nil, fmt.Errorf("read dismissed entities: %w", err)
	}
	defer rows.Close()
	var out []DismissedSummary
	for rows.Next() {
		var (
			ds               DismissedSummary
			health, delivery string
			tcode            string
			reasons          []byte
		)
		d, g := &ds.Dismissal, &ds.Entity
		if err := rows.Scan(&d.ID, &d.Fingerprint, &d.EntityType, &d.EntityID, &d.ReasonCode, &d.StatusAtDismissal,
			unixCol{&d.SnoozedUntil}, unixCol{&d.DismissedAt}, &d.DismissedBy, &d.ClearOnStatusChange, unixCol{&d.CreatedAt},
			&g.Lifecycle, &g.Legacy, &health, &delivery, &g.Recent, &tcode, &reasons); err != nil {
			return nil, fmt.Errorf("read dismissed entities: %w", err)
		}
		g.Type, g.Health, g.Delivery, g.TransitionCode, g.Count = d.EntityType, state.Health(health), state.Delivery(delivery), state.ReasonCode(tcode), 1
		if g.ReasonCodes, err = decodeCodes(reasons, nil); err != nil {
			return nil, fmt.Errorf("read dismissed entities: %s: %w", d.Fingerprint, err)
		}
		out = append(out, ds)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read dismissed entities: %w", err)
	}
	return out, nil
}
