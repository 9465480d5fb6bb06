package live

import (
	"context"
	"testing"

	"watchdog/internal/testenv"
)

// TestCompactWhenWorthIt: a view repacks once what it holds outside slabs
// and the slots it let go are an eighth of it; one entity changed over
// and over (a chatty one) never makes it worth a repack, however many
// records it made; changes to many do.
func TestCompactWhenWorthIt(t *testing.T) {
	ctx := context.Background()
	const n = 2000
	st := memStore(t, n, false)
	db := testenv.SQL(t, st.Path())
	v := loadView(t, st)
	counts := func() (int, int) {
		v.mu.RLock()
		defer v.mu.RUnlock()
		return v.loose, v.dead
	}
	// Each rewrite's revisions are past every earlier one's, as the
	// store's would be: the view's feed reads past its cursor.
	base := 1_000_000
	rewrite := func(where string) {
		t.Helper()
		base += 1_000_000
		if _, err := db.ExecContext(ctx, `UPDATE entities SET updated_at = updated_at + 1, revision = ? + rowid WHERE `+where, base); err != nil {
			t.Fatal(err)
		}
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if loose, dead := counts(); loose != n || dead != 0 {
		t.Fatalf("loaded: %d loose, %d dead; want %d, 0", loose, dead, n)
	}
	if moved := v.Compact(); moved != n {
		t.Fatalf("compact moved %d of %d", moved, n)
	}
	if loose, dead := counts(); loose != 0 || dead != 0 {
		t.Errorf("after compact: %d loose, %d dead; want 0, 0", loose, dead)
	}
	if moved := v.compact(0); moved != 0 {
		t.Errorf("a second compact with nothing changed moved %d", moved)
	}
	for range 50 {
		rewrite("id = 'sess-00000007'")
	}
	if loose, dead := counts(); loose != 1 || dead != 1 {
		t.Errorf("one entity changed 50 times: %d loose, %d dead; want 1, 1", loose, dead)
	}
	if moved := v.compact(1); moved != 0 {
		t.Errorf("one chatty entity made a repack worth it: moved %d", moved)
	}
	rewrite("rowid % 7 = 0") // 285 others, out of their slabs
	loose, dead := counts()
	if loose != n/7+1 || dead != n/7+1 {
		t.Errorf("after %d others changed: %d loose, %d dead; want %d, %d", n/7, loose, dead, n/7+1, n/7+1)
	}
	if moved := v.compact(1); moved != n {
		t.Errorf("an eighth changed: compact moved %d of %d", moved, n)
	}
}
