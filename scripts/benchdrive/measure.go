package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// errTimeout is what poll returns when its condition never held.
var errTimeout = errors.New("timed out")

// poll calls fn every interval until it reports true, fails, ctx ends or
// timeout passes (an error wrapping errTimeout, naming what it waited for).
func poll(ctx context.Context, timeout, every time.Duration, what string, fn func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := fn()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s: %w", timeout, what, errTimeout)
		}
		if err := sleepCtx(ctx, every); err != nil {
			return err
		}
	}
}

// detector tells which killed processes a watcher has noticed, and when
// by its own account.
type detector interface {
	// interval is how often the bench asks.
	interval() time.Duration
	// poll returns, for those of pending (fleet indexes) it has seen
	// dead, the time the watcher recorded the death.
	poll(ctx context.Context, pending []int) (map[int]time.Time, error)
}

// deaths is the result of one death-latency run.
type deaths struct {
	latencies []time.Duration // recorded − kill, of each death detected
	killed    int
	missed    int // not detected within the timeout
}

func (d deaths) median() time.Duration { return percentile(d.latencies, 0.5) }
func (d deaths) p99() time.Duration    { return percentile(d.latencies, 0.99) }

// victims spreads k of n indexes evenly over the fleet.
func victims(n, k int) []int {
	k = min(k, n)
	out := make([]int, 0, k)
	for j := 0; j < k; j++ {
		out = append(out, j*n/k)
	}
	return out
}

// measureDeaths kills the victims one at a time, gap apart, and asks det
// about every one killed and not yet seen until it is, or until timeout
// has passed since its kill (then it counts as missed).
func measureDeaths(ctx context.Context, f *fleet, vs []int, gap, timeout time.Duration, det detector) (deaths, error) {
	type kill struct {
		i  int
		at time.Time
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kills := make(chan kill, len(vs))
	killErr := make(chan error, 1)
	go func() {
		defer close(kills)
		for j, i := range vs {
			if j > 0 {
				if err := sleepCtx(ctx, gap); err != nil {
					return
				}
			}
			at, err := f.kill(i)
			if err != nil {
				killErr <- err
				return
			}
			kills <- kill{i, at}
		}
	}()

	res := deaths{}
	pending := map[int]time.Time{} // index → kill time
	tick := time.NewTicker(det.interval())
	defer tick.Stop()
	for open := true; open || len(pending) > 0; {
		select {
		case k, ok := <-kills:
			if !ok {
				open, kills = false, nil
				continue
			}
			pending[k.i] = k.at
			res.killed++
			continue
		case err := <-killErr:
			return res, err
		case <-ctx.Done():
			return res, context.Cause(ctx)
		case <-tick.C:
		}
		if len(pending) == 0 {
			continue
		}
		keys := make([]int, 0, len(pending))
		for i := range pending {
			keys = append(keys, i)
		}
		slices.Sort(keys)
		found, err := det.poll(ctx, keys)
		if err != nil {
			return res, err
		}
		now := time.Now()
		for _, i := range keys {
			killedAt := pending[i]
			if at, ok := found[i]; ok {
				res.latencies = append(res.latencies, at.Sub(killedAt))
				delete(pending, i)
			} else if now.Sub(killedAt) > timeout {
				res.missed++
				delete(pending, i)
			}
		}
	}
	return res, nil
}

// percentile is the nearest-rank p-quantile of ds (0 when empty): the
// smallest value with at least p of the values at or below it. With 50
// deaths p99 is the slowest of them.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}
