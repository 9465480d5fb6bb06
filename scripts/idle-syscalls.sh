#!/usr/bin/env bash
# idle-syscalls.sh: what an idle daemon costs, as syscalls, side by side.
#
#   scripts/idle-syscalls.sh [BASELINE_BINARY] [SECONDS]
#
# Builds ./cmd/watchdog, starts it on an empty SQLite store with no config
# but a port and no auth, lets it settle 3 s, then counts its syscalls for
# SECONDS (default 10) with `strace -c -f`. With BASELINE_BINARY (e.g. an
# older build) the same is done for it right after, and the ratios are
# printed: a daemon with nothing to do should wake for nothing. Needs
# strace (apt-get install -y strace) and root or ptrace rights. Loopback
# only; each daemon is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-}
secs=${2:-10}
command -v strace >/dev/null || { echo "idle-syscalls: strace is not installed (apt-get install -y strace)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/watchdog" ./cmd/watchdog

count() { # count BIN PORT -> "fsync futex nanosleep epoll_pwait total" per second
	local bin=$1 port=$2 d
	d=$(mktemp -d -p "$work")
	printf 'store:\n  dsn: %s/w.db\nlisten: 127.0.0.1:%s\nauth: none\n' "$d" "$port" >"$d/c.yaml"
	"$bin" serve --config "$d/c.yaml" 2>"$d/log" &
	local pid=$!
	sleep 3
	timeout -s INT "$secs" strace -c -f -p "$pid" -o "$d/strace.txt" >/dev/null 2>&1 || true
	kill "$pid"; wait "$pid" 2>/dev/null || true
	awk -v s="$secs" '
		$NF=="fsync"||$NF=="fdatasync" {f+=$4}
		$NF=="futex" {x+=$4} $NF=="nanosleep" {n+=$4} $NF=="epoll_pwait" {e+=$4}
		$1 ~ /^[0-9.]+$/ && $NF!="total" {t+=$4}
		END {printf "%.1f %.1f %.1f %.1f %.1f\n", f/s, x/s, n/s, e/s, t/s}' "$d/strace.txt"
}

new=$(count "$work/watchdog" 19921)
printf '%-10s %8s %8s %10s %12s %8s   (per second, %ss idle, empty store)\n' binary fsync futex nanosleep epoll_pwait total "$secs"
printf '%-10s %8s %8s %10s %12s %8s\n' this $new
if [ -n "$base" ]; then
	old=$(count "$base" 19922)
	printf '%-10s %8s %8s %10s %12s %8s\n' baseline $old
	paste <(tr ' ' '\n' <<<"$new") <(tr ' ' '\n' <<<"$old") | awk '
		BEGIN {split("fsync futex nanosleep epoll_pwait total", k)}
		{printf "%s %s", (NR==1 ? "ratio     " : ""), ($2>0 ? sprintf("%8.2f", $1/$2) : "       -")}
		END {print ""}'
fi
