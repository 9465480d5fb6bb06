#!/usr/bin/env bash
# bench: issue 13's "what must be shown", measured on the real binary.
#
# Builds ./cmd/watchdog and scripts/benchdrive into a temporary directory
# and runs the driver, which prints one table to stdout (how to read it:
# docs/bench.md):
#
#   idle        watchdog serve (default schedule) and monit (`set daemon 1`)
#               on the same 1,000 live processes: CPU per second of wall
#               time, RSS, and the ratios
#   deaths      50 of them killed 200 ms apart: kill → process_dead recorded
#               (watchdog's health_since), kill → "not running" (monit's log)
#   scale       watchdog alone at 10,000 processes, and CPU/s 10,000 ÷ 1,000
#   throughput  POST …/transitions from 8 concurrent loopback clients
#   stores      issue 15: the daemon on SQLite, then on a throwaway
#               PostgreSQL cluster the driver starts (initdb in a temporary
#               directory as the postgres user, unix socket only, fsync
#               on) or on -pg-dsn URL: registrations/s, transitions/s,
#               scrape and GET /api/attention times at 10,000 and 100,000
#               entities, in a second table, PostgreSQL ÷ SQLite
#   flood       the daemon (prlimit --nofile=4096) under 4,200 slow-header
#               connections, held and re-opened, then 1,100 slow-body
#               ones (issue 37), against no flood:
#               /readyz and registrations, ok/timeouts/p99 (ADR-0034);
#               -flood-baseline BIN measures an older binary beside it
#   readers     8 connections that never read (SO_RCVBUF 4096), each asking
#               for the largest list, against 300 entities of about 280 KB:
#               VmRSS before, at the peak, and how soon it is back
#               (issue 37); -readers-baseline BIN measures an older binary
#   memory      the daemon's anonymous RSS (RssAnon) with an empty store and
#               per entity after registering 10,000 and 100,000 running
#               sessions over the API (about 5 minutes);
#               -memory-baseline BIN measures an older binary beside it
#   fdlimit     the daemon under prlimit --nofile=1024 given 5,000 live
#               processes (ADR-0037's fd budget at the issue's scale):
#               registration errors, /readyz, pidfd against polled, every
#               one killed and seen dead, /readyz 503 after the store's
#               tmpfs fills (as root) and after its database is deleted
#               (under a minute)
#   fleet       issue 27: 20 daemons with distinct host ids on one
#               throwaway PostgreSQL, 2,000 sessions each: what each view
#               holds, each daemon's anonymous RSS against a lone daemon's
#               with 2,000, the others' CPU under a burst of 10,000
#               transitions on one host, fleet-wide list and queue reads
#               from a daemon that holds its own host only, a restart to
#               ready at 3,000 own entities (`-run fleet`; ADR-0056);
#               -fleet-baseline BIN times BIN's fleet-wide reads beside
#               this one's, alternately, from a daemon of each
#
# Every argument goes to the driver: `scripts/bench.sh -run deaths -n 200`,
# `scripts/bench.sh -h` lists them. About 15 minutes at the defaults on a
# quiet 2-CPU machine, the stores part 3 of them, the memory part 5 to 9 (`-run stores` alone:
# `make bench-pg`).
# Installs the Debian packages monit, strace (the idle part's fsync
# count) and postgresql when missing (root or sudo). -baseline BIN
# measures an older binary's idle figures beside this one's.
#
# GOBENCH=1 also runs the packages' Go benchmarks (write path, probe sweep,
# reaper, scrape, API endpoints), tuned by COUNT and BENCHTIME_*.
#
# Every process the run starts (sleeps, watchdog serve, monit) lives in
# the driver's process group; on Ctrl-C, a failure or any exit the trap
# below ends that group.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=""
command -v monit >/dev/null 2>&1 || missing="$missing monit"
command -v strace >/dev/null 2>&1 || missing="$missing strace"
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing="$missing postgresql"
if [ -n "$missing" ]; then
	echo "==> installing$missing (Debian packages)" >&2
	sudo=""
	[ "$(id -u)" = 0 ] || sudo=sudo
	# A policy-rc.d that says no keeps postgresql's maintainer scripts
	# from starting the system's cluster (the driver starts its own),
	# only if the host has none.
	policy=/usr/sbin/policy-rc.d
	made=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null && $sudo chmod 0755 "$policy" && made=1
	fi
	rc=0
	# shellcheck disable=SC2086 # one word per package
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null ||
		{ $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null; } || rc=$?
	[ "$made" = 0 ] || $sudo rm -f "$policy"
	[ "$rc" = 0 ] || exit "$rc"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX")"
driver=""
status=0

# stop_driver ends the driver's process group: SIGTERM first (the driver
# then stops what it started), SIGKILL to whatever is left after 10 s.
stop_driver() {
	[ -n "$driver" ] || return 0
	kill -TERM -- "-$driver" 2>/dev/null || return 0
	for _ in $(seq 100); do
		kill -0 -- "-$driver" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL -- "-$driver" 2>/dev/null || true
}
on_exit() {
	[ "$status" = 0 ] || stop_driver
	if [ "$status" != 0 ] && [ -d "$work/run" ]; then
		echo "bench: failed ($status); binaries, logs and databases kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap on_exit EXIT
trap 'status=130; exit 130' INT TERM HUP

echo "==> building watchdog and the bench driver" >&2
go build -o "$work/watchdog" ./cmd/watchdog
go build -o "$work/benchdrive" ./scripts/benchdrive

# The driver makes itself a process group leader (its group id is its
# pid); it runs in the background so that this shell's traps can fire.
"$work/benchdrive" -watchdog "$work/watchdog" -dir "$work/run" "$@" &
driver=$!
wait "$driver" || status=$?
if [ "$status" != 0 ]; then
	exit "$status"
fi

if [ "${GOBENCH:-0}" = 1 ]; then
	COUNT="${COUNT:-3}"
	run() { echo "==> go test $*"; go test -run '^$' -count="$COUNT" "$@"; }
	run -bench . -benchtime "${BENCHTIME_WRITE:-2s}" ./transitions/
	run -bench 'SweepRatio' -benchtime "${BENCHTIME_PROBE:-20x}" ./probe/
	run -bench . -benchtime "${BENCHTIME_SWEEP:-10x}" ./reaper/
	run -bench . -benchtime "${BENCHTIME_SCRAPE:-3x}" ./metrics/
	run -bench . -benchtime "${BENCHTIME_API:-2s}" ./api/
fi
