#!/usr/bin/env bash
# rename-race.sh: issue 11's artifact rename race against the built daemon.
#
# The daemon runs under strace (openat, openat2, read, with -y so every
# descriptor shows its path) and sweeps every second a few hundred ended
# sessions whose contract reads root/d/x.json (kind json, as a path and as
# globs). Meanwhile a racer swaps root/d, atomically and as fast as it can,
# with a symlink to an outside directory that holds a valid x.json. At the
# end it counts the daemon's syscalls that touched anything outside the
# root: it must be 0.
#
#   scripts/rename-race.sh [SECONDS]     (default 60; needs strace, python3, curl)
set -euo pipefail

secs=${1:-60}
sessions=${SESSIONS:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/watchdog-rename-race.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [ -z "${KEEP:-}" ]; then rm -rf "$tmp"; else echo "kept $tmp"; fi
}
trap cleanup EXIT

for tool in strace python3 curl; do
	command -v "$tool" >/dev/null || { echo "rename-race: $tool is needed" >&2; exit 2; }
done

(cd "$here" && go build -o "$tmp/watchdog" ./cmd/watchdog)

root=$tmp/root
outside=$tmp/outside
mkdir -p "$root/d" "$outside"
echo '{"inside": true}' >"$root/d/x.json"
echo '{"outside": true}' >"$outside/x.json"
ln -s "$outside" "$root/swap"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/config.yaml" <<EOF
listen: 127.0.0.1:$port
store:
  driver: sqlite
  dsn: $tmp/watchdog.db
jobs:
  sweep: "@every 1s"
log:
  level: warn
EOF

strace -f -qq -y -e trace=openat,openat2,read -o "$tmp/strace.log" \
	"$tmp/watchdog" serve --config "$tmp/config.yaml" >"$tmp/daemon.log" 2>&1 &
pids+=($!)

url=http://127.0.0.1:$port
for _ in $(seq 100); do
	curl -fsS "$url/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
curl -fsS "$url/healthz" >/dev/null || { echo "rename-race: the daemon did not start" >&2; cat "$tmp/daemon.log" >&2; exit 1; }

# A build that makes a token by default puts it beside the database.
token=()
if [ -f "$tmp/watchdog.token" ]; then token=(-H "Authorization: Bearer $(cat "$tmp/watchdog.token")"); fi
for i in $(seq "$sessions"); do
	curl -fsS -o /dev/null "${token[@]}" -H 'Content-Type: application/json' -X POST "$url/api/v1/entities" -d @- <<EOF
{"type": "session", "id": "race-$i", "lifecycle": "completed", "artifacts_root": "$root",
 "artifacts": [{"path": "d/x.json", "kind": "json"}, {"path": "d/*.json", "kind": "json"},
               {"path": "*/x.json", "kind": "json"}, {"path": "d", "kind": "dir"}]}
EOF
done

python3 - "$root/d" "$root/swap" "$secs" >"$tmp/racer.log" <<'EOF' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b, end = sys.argv[1].encode(), sys.argv[2].encode(), time.time() + float(sys.argv[3])
n = 0
while time.time() < end:
    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    n += 1
print(n)
EOF
racer=$!
pids+=($racer)
wait "$racer"
swaps=$(cat "$tmp/racer.log")

# SIGTERM to the daemon itself (strace would only detach), then let strace
# finish its log.
daemon=$(pgrep -P "${pids[0]}" | head -1 || true)
[ -n "$daemon" ] && kill "$daemon"
wait "${pids[0]}" 2>/dev/null || true

outside_calls=$(grep -c -F "<$outside" "$tmp/strace.log" || true)
inside_reads=$(grep -E '^[0-9]+ +read\(' "$tmp/strace.log" | grep -c -F "<$root/" || true)
echo "rename-race: ${secs}s, $sessions sessions, $swaps swaps; daemon reads of files inside the root: $inside_reads; syscalls touching the outside: $outside_calls"
if [ "$outside_calls" -ne 0 ]; then
	grep -F "<$outside" "$tmp/strace.log" | head -20
	exit 1
fi
