#!/usr/bin/env bash
# bench: every benchmark the issues ask for, in one run, so the ratios are
# taken on the same machine in the same weather.
#
#   write path     transitions: BenchmarkRegister, BenchmarkTransition,
#                  BenchmarkTransitionBatch1000 (SQLite, synchronous=FULL)
#   probe          probe: BenchmarkSweepRatio (probe vs raw-syscall floor,
#                  interleaved; the ratio metric is the figure to report)
#   daemon sweep   reaper: BenchmarkSweepUnchanged (store read + probe of
#                  every entity, no write: it fails if one happens) and
#                  BenchmarkSweepStoreRead (the store read alone)
#   scrape         metrics: BenchmarkScrape at 10,000 and 100,000 entities
#   API            api: BenchmarkTransitionEndpoint (concurrent clients on
#                  loopback), BenchmarkAttentionEndpoint
#
# BENCHTIME (default 1x for the big ones, 2s for the write path) and
# COUNT (default 3) tune it. Results go to stdout.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT="${COUNT:-3}"
run() { echo "==> go test $*"; go test -run '^$' -count="$COUNT" "$@"; }

run -bench . -benchtime "${BENCHTIME_WRITE:-2s}" ./transitions/
run -bench 'SweepRatio' -benchtime "${BENCHTIME_PROBE:-20x}" ./probe/
run -bench . -benchtime "${BENCHTIME_SWEEP:-10x}" ./reaper/
run -bench . -benchtime "${BENCHTIME_SCRAPE:-3x}" ./metrics/
run -bench . -benchtime "${BENCHTIME_API:-2s}" ./api/
