package state

import (
	"testing"
	"time"
)

func TestFormatLeft(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{45 * time.Second, "45s"},
		{59*time.Second + 600*time.Millisecond, "1m"},
		{90 * time.Second, "1m 30s"},
		{4*time.Hour - 300*time.Millisecond, "4h"},
		{4*time.Hour - time.Minute - 10*time.Second, "3h 59m"},
		{3*time.Hour + 59*time.Minute + 40*time.Second, "4h"},
		{26*time.Hour + 20*time.Minute, "1d 2h"},
		{48 * time.Hour, "2d"},
	} {
		if got := FormatLeft(tt.d); got != tt.want {
			t.Errorf("FormatLeft(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
