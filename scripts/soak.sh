#!/usr/bin/env bash
# soak: run the real daemon against a realistic host for a while and report
# what it costs.
#
# Builds the binary, registers SOAK_ENTITIES (1000) sessions, SOAK_LIVE
# (300) of them backed by real `sleep 600` processes and the rest by dead
# pids, each with a heartbeat file and two artifacts under a temporary root,
# then runs `watchdog serve` with the sweep at "@every 1s" (the other jobs
# on their defaults: the dead ones are ended after terminal_grace, and from
# then on their artifacts are checked every sweep) for SOAK_SECONDS (60),
# sampling the daemon's RSS (VmRSS) and CPU time (utime+stime) from /proc.
# Prints peak and average RSS, the CPU share, and the sweeps run (from
# /metrics). Everything it started is stopped on exit, by pid.
#
#   scripts/soak.sh                      # from the repository root
#   SOAK_SECONDS=600 scripts/soak.sh     # longer
set -euo pipefail

SOAK_SECONDS="${SOAK_SECONDS:-60}"
ENTITIES="${SOAK_ENTITIES:-1000}"
LIVE="${SOAK_LIVE:-300}"

if [[ ! -f go.mod || ! -d cmd/watchdog ]]; then
	echo "soak.sh: run it from the repository root (scripts/soak.sh)" >&2
	exit 2
fi
if ((LIVE > ENTITIES)); then
	echo "soak.sh: SOAK_LIVE ($LIVE) exceeds SOAK_ENTITIES ($ENTITIES)" >&2
	exit 2
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/watchdog-soak.XXXXXX")"
sleepers=()
daemon=""

# cleanup stops the daemon (SIGTERM: it closes the store), then the sleeps
# this script started, each by its pid, and removes the temporary root.
cleanup() {
	local rc=$?
	trap - EXIT
	if [[ -n "$daemon" ]] && kill -0 "$daemon" 2>/dev/null; then
		kill -TERM "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	if ((${#sleepers[@]} > 0)); then
		kill "${sleepers[@]}" 2>/dev/null || true
		wait "${sleepers[@]}" 2>/dev/null || true
	fi
	rm -rf "$root"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "==> build"
go build -o "$root/watchdog" ./cmd/watchdog
wd="$root/watchdog"
db="$root/watchdog.db"
mkdir -p "$root/hb" "$root/art"

echo "==> start $LIVE sleep processes"
for ((i = 0; i < LIVE; i++)); do
	sleep 600 &
	sleepers+=("$!")
done

# Dead pids: free now, and recorded with a start time an hour ago, so even
# a pid the kernel hands out again during the soak reads as reused (dead),
# never as alive.
echo "==> pick $((ENTITIES - LIVE)) dead pids"
pid_max="$(cat /proc/sys/kernel/pid_max)"
dead=()
for ((p = pid_max - 1; p > 1 && ${#dead[@]} < ENTITIES - LIVE; p--)); do
	[[ -e "/proc/$p" ]] || dead+=("$p")
done
if ((${#dead[@]} < ENTITIES - LIVE)); then
	echo "soak.sh: only ${#dead[@]} free pids below pid_max $pid_max" >&2
	exit 1
fi
an_hour_ago=$(($(date +%s) - 3600))

echo "==> register $ENTITIES entities"
reg_start=$(date +%s.%N)
for ((i = 0; i < ENTITIES; i++)); do
	id="soak-$(printf '%04d' "$i")"
	hb="$root/hb/$id.hb"
	art="$root/art/$id"
	mkdir -p "$art"
	: >"$hb"
	printf 'review of %s\n' "$id" >"$art/review.md"
	printf '{"id":"%s","ok":true}\n' "$id" >"$art/result.json"
	if ((i < LIVE)); then
		proc="\"pid\":${sleepers[i]}"
	else
		proc="\"pid\":${dead[i - LIVE]},\"pid_start_time\":$an_hour_ago"
	fi
	printf '{"type":"session","id":"%s","label":"soak %d","lifecycle":"running",%s,"heartbeat_file":"%s","timeout_seconds":3600,"artifacts_root":"%s","artifacts":[{"path":"review.md","min_bytes":1},{"path":"result.json","kind":"json"}]}\n' \
		"$id" "$i" "$proc" "$hb" "$art" |
		"$wd" register --db "$db" --json - >/dev/null
done
echo "    $ENTITIES registered in $(awk -v a="$reg_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"

cat >"$root/config.yaml" <<EOF
store:
  dsn: "$db"
listen: 127.0.0.1:0
jobs:
  sweep: "@every 1s"
log:
  level: info
  format: json
EOF

echo "==> serve for ${SOAK_SECONDS}s"
"$wd" serve --config "$root/config.yaml" 2>"$root/serve.log" &
daemon=$!
for ((i = 0; i < 600; i++)); do
	grep -q '"msg":"ready"' "$root/serve.log" 2>/dev/null && break
	if ! kill -0 "$daemon" 2>/dev/null; then
		echo "soak.sh: serve exited before it was ready:" >&2
		cat "$root/serve.log" >&2
		exit 1
	fi
	sleep 0.1
done
addr="$(grep -o '"msg":"listening","addr":"[^"]*"' "$root/serve.log" | head -n1 | sed 's/.*"addr":"\([^"]*\)"/\1/')"
if [[ -z "$addr" ]]; then
	echo "soak.sh: serve never said where it listens:" >&2
	cat "$root/serve.log" >&2
	exit 1
fi
base="http://$addr"

clk_tck="$(getconf CLK_TCK)"
# cpu_ticks prints utime+stime of the daemon; the fields are counted after
# the command name, which may contain spaces.
cpu_ticks() {
	local stat rest
	stat="$(<"/proc/$daemon/stat")"
	rest="${stat##*) }"
	read -r -a f <<<"$rest"
	echo $((f[11] + f[12]))
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$daemon/status"; }
metric() { curl -fsS --max-time 5 "$base/metrics" | awk -v s="$1" '$1 == s { print $2; found = 1 } END { if (!found) print 0 }'; }

t0=$(date +%s.%N)
ticks0=$(cpu_ticks)
rss_sum=0 rss_max=0 samples=0
end=$(($(date +%s) + SOAK_SECONDS))
while (($(date +%s) < end)); do
	if ! kill -0 "$daemon" 2>/dev/null; then
		echo "soak.sh: serve died during the soak:" >&2
		tail -n 20 "$root/serve.log" >&2
		exit 1
	fi
	r=$(rss_kib)
	rss_sum=$((rss_sum + r)) samples=$((samples + 1))
	((r > rss_max)) && rss_max=$r
	sleep 1
done
ticks1=$(cpu_ticks)
t1=$(date +%s.%N)
hwm_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon/status")

sweeps_ok=$(metric 'watchdog_job_runs_total{job="sweep",result="ok"}')
sweeps_skipped=$(metric 'watchdog_job_runs_total{job="sweep",result="skipped"}')
sweeps_failed=$(awk -v e="$(metric 'watchdog_job_runs_total{job="sweep",result="error"}')" \
	-v t="$(metric 'watchdog_job_runs_total{job="sweep",result="timeout"}')" 'BEGIN { print e + t }')
sweep_sum=$(metric 'watchdog_job_duration_seconds_sum{job="sweep"}')
sweep_count=$(metric 'watchdog_job_duration_seconds_count{job="sweep"}')
reaped=$(curl -fsS --max-time 5 "$base/metrics" | awk '/^watchdog_reaped_total\{/ { n += $2 } END { print n + 0 }')

echo "==> results ($ENTITIES entities: $LIVE live, $((ENTITIES - LIVE)) dead; ${SOAK_SECONDS}s, $samples samples)"
awk -v max="$rss_max" -v sum="$rss_sum" -v n="$samples" -v hwm="$hwm_kib" \
	-v dt="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v dticks="$((ticks1 - ticks0))" -v hz="$clk_tck" \
	-v ok="$sweeps_ok" -v sk="$sweeps_skipped" -v bad="$sweeps_failed" -v ssum="$sweep_sum" -v scount="$sweep_count" -v reaped="$reaped" '
BEGIN {
	printf "peak RSS:      %.1f MiB (VmHWM %.1f MiB)\n", max / 1024, hwm / 1024
	printf "average RSS:   %.1f MiB\n", (n ? sum / n : 0) / 1024
	printf "CPU share:     %.2f %% of one core (%.2fs CPU over %.1fs)\n", 100 * dticks / hz / dt, dticks / hz, dt
	printf "sweeps run:    %d ok, %d skipped (overlap), %d failed or over budget\n", ok, sk, bad
	printf "sweep time:    %.1f ms average\n", (scount ? 1000 * ssum / scount : 0)
	printf "reaped:        %d entities ended by the reaper\n", reaped
}'
