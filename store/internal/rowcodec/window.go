package rowcodec

// InWindow is the failure window's rule in SQL (attention.AgedOut, Lingers
// included), one text for every query that keeps an ended entity by age:
// open, or reached its outcome at or after since, or orphaned. notTerminal
// is the driver's spelling of an open row; since, its placeholder.
func InWindow(notTerminal, since string) string {
	return "lifecycle IS NOT NULL AND (" + notTerminal + " OR COALESCE(ended_at, lifecycle_at, updated_at) >= " + since + " OR health = 'orphaned')"
}
