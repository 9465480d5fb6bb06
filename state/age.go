package state

import (
	"strconv"
	"time"
)

// FormatAge renders an age as the CLI's tables show it: one unit (42s, 7m,
// 3h, 2d), truncated. The probe's stored evidence keeps its own, finer
// format: changing either would change what stored evidence reads.
func FormatAge(d time.Duration) string {
	var n int64
	var unit string
	switch {
	case d < time.Second:
		return "0s"
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "m"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	default:
		n, unit = int64(d/(24*time.Hour)), "d"
	}
	return strconv.FormatInt(n, 10) + unit
}

// FormatLeft is a countdown in two units, rounded to the smaller ("3h 59m",
// "4h"), where FormatAge would truncate to "3h".
func FormatLeft(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	for i := 0; i < len(units)-1; i++ {
		big, small := units[i], units[i+1]
		if d+small.size/2 < big.size {
			continue
		}
		d = d.Round(small.size)
		n, rest := int64(d/big.size), int64(d%big.size/small.size)
		if rest == 0 {
			return strconv.FormatInt(n, 10) + big.name
		}
		return strconv.FormatInt(n, 10) + big.name + " " + strconv.FormatInt(rest, 10) + small.name
	}
	return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
}
