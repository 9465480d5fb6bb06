package live

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"watchdog/store"
	"watchdog/transitions"
)

// TestSubscribeWakesWithWhatChanged: a Sync that applied changes wakes
// each subscription once (a burst is one wake) and Take lists the changed
// entities, each once; past MaxChangedKeys it says More; a dismissal
// alone says Dismissals; a Sync with nothing new wakes no one; a closed
// subscription hears nothing.
func TestSubscribeWakesWithWhatChanged(t *testing.T) {
	ctx := context.Background()
	daemon, cli := twoStores(t)
	v := New(daemon, nil, 0)
	if err := v.Load(ctx); err != nil {
		t.Fatal(err)
	}
	w := &transitions.Writer{Store: cli}
	sub := v.Subscribe()
	other := v.Subscribe()
	if got := v.Subscribers(); got != 2 {
		t.Fatalf("Subscribers = %d, want 2", got)
	}
	woken := func(s *Subscription) bool {
		select {
		case <-s.C():
			return true
		default:
			return false
		}
	}

	tests := []struct {
		name  string
		write func()
		want  Changes
	}{
		{"nothing written", func() {}, Changes{}},
		{"one entity twice", func() {
			register(t, w, "agent", "a1", "idle")
			move(t, w, "a1", "idle", "busy")
		}, Changes{Entities: []string{"agent/a1"}}},
		{"more than the bound", func() {
			for i := range MaxChangedKeys + 5 {
				register(t, w, "agent", fmt.Sprintf("b%03d", i), "idle")
			}
		}, Changes{More: true}},
		{"a dismissal alone", func() {
			if err := cli.UpsertDismissal(ctx, store.Dismissal{Fingerprint: "agent/a1/x.y.z", EntityType: "agent", EntityID: "a1", ReasonCode: "x.y.z", DismissedBy: "test"}); err != nil {
				t.Fatal(err)
			}
		}, Changes{Dismissals: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.write()
			if err := v.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := woken(sub), !tc.want.Empty(); got != want {
				t.Fatalf("woken = %v, want %v", got, want)
			}
			if woken(sub) {
				t.Fatal("woken twice by one Sync")
			}
			got := sub.Take()
			if tc.want.More {
				if !got.More || len(got.Entities) != MaxChangedKeys {
					t.Fatalf("Take = %d entities, More %v; want %d and More", len(got.Entities), got.More, MaxChangedKeys)
				}
			} else if !slices.Equal(got.Entities, tc.want.Entities) || got.More || got.Dismissals != tc.want.Dismissals {
				t.Fatalf("Take = %+v, want %+v", got, tc.want)
			}
			if !sub.Take().Empty() {
				t.Fatal("a second Take is not empty")
			}
			// The other subscription heard the same, on its own.
			if got := woken(other); got != !tc.want.Empty() {
				t.Fatalf("other woken = %v", got)
			}
			other.Take()
		})
	}

	sub.Close()
	register(t, w, "agent", "late", "idle")
	if err := v.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if woken(sub) {
		t.Fatal("a closed subscription was woken")
	}
	if got := v.Subscribers(); got != 1 {
		t.Fatalf("Subscribers after Close = %d, want 1", got)
	}
}
