package page

import (
	"cmp"
	"html/template"
	"net/url"
	"strconv"
	"time"

	"watchdog/state"
	"watchdog/wire"
)

// pill is one pill of the compound state (state.StatePills).
type pill struct {
	Tone, Text, Title string
	// Dimension is the pill's: lifecycle, health, delivery or finding.
	Dimension string
	Icon      template.HTML
}

type entityRow struct {
	Type, ID, Label, Href string
	Chain                 string
	// Pills are the compound state: the lifecycle's, then one per problem.
	Pills     []pill
	PID       string
	Since     string
	Heartbeat string
	// HeartbeatSource is where Heartbeat came from: "file" or "posted".
	HeartbeatSource string
	Exit            string
	// Host is the host's name, else its id; HostID is shown on hover.
	Host, HostID string
}

// icons are inline SVG in currentColor: no glyph a font may lack (ADR-0050).
var icons = map[string]template.HTML{
	"info":      svgIcon(`<path d="M1.5 8h3l2-5 3 10 2-5h3"/>`),
	"success":   svgIcon(`<path d="M3 8.5l3.2 3.2L13 4.8"/>`),
	"danger":    svgIcon(`<circle cx="8" cy="8" r="6.5"/><path d="M5.6 5.6l4.8 4.8M10.4 5.6l-4.8 4.8"/>`),
	"warning":   svgIcon(`<path d="M4 1.8h8M4 14.2h8M5 1.8v2.4L8 8l-3 3.8v2.4M11 1.8v2.4L8 8l3 3.8v2.4"/>`),
	"neutral":   svgIcon(`<rect x="3.5" y="3.5" width="9" height="9" rx="1.5"/>`),
	"cancelled": svgIcon(`<circle cx="8" cy="8" r="6.5"/><path d="M3.4 12.6l9.2-9.2"/>`),
	"legacy":    svgIcon(`<path d="M4 8h8"/>`),
}

func svgIcon(paths string) template.HTML {
	return template.HTML(`<svg class="pill-icon" data-testid="pill-icon" viewBox="0 0 16 16" width="11" height="11" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">` + paths + `</svg>`) //nolint:gosec // constant markup
}

// pillsOf is the entity's compound state as pills, from state.StatePills.
func pillsOf(e *wire.Entity) []pill {
	var out []pill
	for _, sp := range state.StatePills(e.State, state.ContractSubject(e.Artifacts)) {
		p := pill{Tone: string(sp.Tone), Text: sp.Label, Dimension: sp.Dimension}
		switch {
		case sp.Dimension == state.PillLifecycle && sp.Value == state.LifecycleLegacy:
			p.Tone, p.Text = "legacy", "legacy"
			p.Title = "Created before the current status vocabulary; excluded from live metrics, failure counts and the queue"
		case sp.Dimension == state.PillLifecycle:
			p.Title = "lifecycle " + sp.Value + "; the entity's severity is " + string(e.State.Severity)
		default:
			p.Title = sp.Dimension + " " + sp.Value
		}
		p.Icon = icons[p.Tone]
		if sp.Dimension == state.PillLifecycle && sp.Value == "cancelled" {
			p.Icon = icons["cancelled"]
		}
		out = append(out, p)
	}
	return out
}

func rowOf(e *wire.Entity, hostNames map[string]string, now time.Time) entityRow {
	r := entityRow{Type: e.Type, ID: e.ID, Label: labelOf(e), Href: entityHref(e.Type, e.ID), Chain: e.Display,
		Host: cmp.Or(hostNames[e.HostID], e.HostID), HostID: e.HostID, Pills: pillsOf(e)}
	if e.PID != 0 {
		r.PID = strconv.Itoa(e.PID)
	}
	since := e.StartedAt.Time
	if since.IsZero() {
		since = e.CreatedAt.Time
	}
	r.Since = ago(now, since)
	// The judged heartbeat, file or posted.
	r.Heartbeat = ago(now, e.LastHeartbeat().Time)
	if e.Heartbeat != nil {
		r.HeartbeatSource = e.Heartbeat.Source
	}
	if e.ExitStatus != nil {
		r.Exit = e.ExitStatus.Short()
	}
	return r
}

func labelOf(e *wire.Entity) string {
	return cmp.Or(e.Label, e.Type+"/"+e.ID)
}

// entityHref is the entity page's path.
func entityHref(typ, id string) string {
	return "/entities/" + url.PathEscape(typ) + "/" + url.PathEscape(id)
}

// ago renders "12m ago" (state.FormatAge), "" for a zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return state.FormatAge(now.Sub(t)) + " ago"
}
