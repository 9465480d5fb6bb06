// Package docs embeds the runbook and parses its reason-code sections, so the
// page shows each code's Do line from the one text operators read (ADR-0049).
package docs

import (
	_ "embed"
	"regexp"
	"strings"
	"sync"
)

//go:embed runbook.md
var runbook string

// reasonPart heads the runbook's part with one section per kind of attention item.
const reasonPart = "## Reason codes"

// Section is one section of the runbook's reason-code part.
type Section struct {
	// Title is the section's heading ("Stalled, idle or slow").
	Title string
	// Codes are the reason codes it covers: the `<a id>` anchors before it.
	Codes []string
	// Do is the section's one-line **Do.** paragraph, without the label.
	Do string
	// Text is the rest of the section, as written (Markdown).
	Text string
}

var (
	anchorLine = regexp.MustCompile(`^<a id="([a-z0-9_.]+)"></a>$`)
	parseOnce  sync.Once
	sections   []Section
	byCode     map[string]int
)

// Runbook is the whole runbook, as embedded.
func Runbook() string { return runbook }

// Sections are the reason-code part's sections, in the runbook's order.
func Sections() []Section {
	parseOnce.Do(parse)
	return sections
}

// ForCode is the section of a reason code, if the runbook has one.
func ForCode(code string) (Section, bool) {
	parseOnce.Do(parse)
	i, ok := byCode[code]
	if !ok {
		return Section{}, false
	}
	return sections[i], true
}

// Link is where a reason code's runbook section is: base (alertmanager.runbook_url)
// with "#<code>" appended, or the daemon's own /runbook with no base.
func Link(base, code string) string {
	if base == "" {
		base = "/runbook"
	}
	return strings.TrimRight(base, "#") + "#" + code
}

// Todo is what the runbook says to do about one reason code.
type Todo struct {
	// Do is the code's section's one-line Do paragraph.
	Do string
	// Link is where the section is (Link).
	Link string
}

// For is what to do about code and its Link (base as there); ok is false when
// the runbook has no section for code. Page, API and alerts all ask it alike.
func For(base, code string) (t Todo, ok bool) {
	sec, ok := ForCode(code)
	if !ok {
		return Todo{}, false
	}
	return Todo{Do: sec.Do, Link: Link(base, code)}, true
}

// parse reads the reason-code part: each "### " heading a section, the anchors
// before it its codes, its first "**Do.**" line its Do.
func parse() {
	byCode = map[string]int{}
	_, part, ok := strings.Cut(runbook, "\n"+reasonPart+"\n")
	if !ok {
		return
	}
	if end := strings.Index(part, "\n## "); end >= 0 {
		part = part[:end]
	}
	var codes []string
	var cur *Section
	var text []string
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimSpace(strings.Join(text, "\n"))
			sections = append(sections, *cur)
		}
		cur, text = nil, nil
	}
	for _, line := range strings.Split(part, "\n") {
		if m := anchorLine.FindStringSubmatch(line); m != nil {
			flush()
			codes = append(codes, m[1])
			continue
		}
		if title, ok := strings.CutPrefix(line, "### "); ok {
			flush()
			cur = &Section{Title: strings.TrimSpace(title), Codes: codes}
			for _, c := range codes {
				byCode[c] = len(sections)
			}
			codes = nil
			continue
		}
		if cur == nil {
			continue
		}
		if do, ok := strings.CutPrefix(line, "**Do.** "); ok && cur.Do == "" {
			cur.Do = strings.TrimSpace(do)
			continue
		}
		text = append(text, line)
	}
	flush()
}
