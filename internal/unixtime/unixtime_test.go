package unixtime

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// A time at the store's precision comes back unchanged from a REAL column
// or a JSON number, whatever its microseconds, now and until 2106.
func TestSecondsRoundTrip(t *testing.T) {
	for _, base := range []int64{1716517000, 2147483647, 4000000000} {
		for _, us := range []int64{0, 1, 123456, 450000, 500000, 999999} {
			want := time.Unix(base, us*1000)
			if got := FromSeconds(Seconds(want)); !got.Equal(want) {
				t.Errorf("%v: round trip gave %v", want, got)
			}
			var back Time
			b, _ := json.Marshal(Of(want))
			if err := json.Unmarshal(b, &back); err != nil || !back.Equal(want) {
				t.Errorf("%v: JSON %s gave %v, %v", want, b, back, err)
			}
		}
	}
	if Seconds(time.Time{}) != 0 || !FromSeconds(0).IsZero() {
		t.Error("the zero time is not 0")
	}
	if d := Duration(0.3); d != 300*time.Millisecond || d.Seconds() != 0.3 {
		t.Errorf("Duration(0.3) = %v", d)
	}
}

// The wire shapes keep the float64 fields' JSON: a number of seconds, 0
// for an unset always-present field, left out under omitzero, null for a
// nil pointer, and a type error naming the field for a string.
func TestJSONShape(t *testing.T) {
	type shape struct {
		At       Time  `json:"at"`
		Started  Time  `json:"started_at,omitzero"`
		Snoozed  *Time `json:"snoozed_until"`
		Fraction Time  `json:"fraction"`
	}
	b, err := json.Marshal(shape{At: Of(time.Unix(1716517000, 0)), Fraction: Of(time.Unix(1716517000, 120000000))})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"at":1716517000,"snoozed_until":null,"fraction":1716517000.12}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if b, _ := json.Marshal(shape{}); string(b) != `{"at":0,"snoozed_until":null,"fraction":0}` {
		t.Errorf("zero: %s", b)
	}
	var s shape
	err = json.Unmarshal([]byte(`{"started_at":"soon"}`), &s)
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) || typ.Field != "started_at" || typ.Value != "string" {
		t.Errorf("a string time: %v", err)
	}
}

// TestDurationSaturates: a timeout beyond time.Duration's range stays a
// huge positive duration (and a huge negative one negative) instead of
// wrapping round, which would turn "too large" into "negative".
func TestDurationSaturates(t *testing.T) {
	for _, tc := range []struct {
		seconds float64
		want    time.Duration
	}{
		{1.5, 1500 * time.Millisecond},
		{1e10, math.MaxInt64},
		{1e300, math.MaxInt64},
		{-1e10, math.MinInt64},
	} {
		if got := Duration(tc.seconds); got != tc.want {
			t.Errorf("Duration(%g) = %v, want %v", tc.seconds, got, tc.want)
		}
	}
}

// TestNoSilentOverflow: a number of seconds beyond what a time.Time's
// microseconds hold is refused on the way in (Checked, the JSON type,
// quoting the number as sent) and saturates in FromSeconds, never
// wrapping round to another time or to "not recorded"; Seconds of a far
// time does not wrap either.
func TestNoSilentOverflow(t *testing.T) {
	for _, s := range []float64{9.3e18, 1e18, 1e308, -1e18, math.Inf(1), math.NaN(), MaxSeconds + 2} {
		if _, err := Checked(s); !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Checked(%g) = %v, want ErrOutOfRange", s, err)
		}
	}
	for _, s := range []float64{1, 1716517000.5, MaxSeconds, -MaxSeconds} {
		if at, err := Checked(s); err != nil || Seconds(at) != s {
			t.Errorf("Checked(%g) = %v, %v", s, at, err)
		}
	}
	for _, tc := range []struct {
		s    float64
		want float64
	}{{9.3e18, MaxSeconds}, {1e308, MaxSeconds}, {-1e308, -MaxSeconds}} {
		if got := Seconds(FromSeconds(tc.s)); got != tc.want {
			t.Errorf("Seconds(FromSeconds(%g)) = %g, want %g (saturated)", tc.s, got, tc.want)
		}
	}
	if far := time.Unix(1e15, 0); Seconds(far) != 1e15 {
		t.Errorf("Seconds of the year 31 million = %g", Seconds(far))
	}
	for _, lit := range []string{"1e18", "9.3e18", "1e308"} {
		var at Time
		err := json.Unmarshal([]byte(lit), &at)
		if !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), lit) || !at.IsZero() {
			t.Errorf("JSON %s: %v, %v; want ErrOutOfRange quoting it", lit, at, err)
		}
	}
}
