#!/usr/bin/env bash
# deploy-check: check the deployment files in deploy/ with the tools
# operators use on them.
#
#   promtool check rules   deploy/prometheus/alerts.yml
#   promtool test rules    deploy/prometheus/alerts_test.yml
#   systemd-analyze verify the unit, alone and with each example drop-in
#                          (ExecStart pointed at a freshly built binary)
#   systemd-analyze security --offline=yes, same combinations: fails when
#                          the overall exposure is above MAX_EXPOSURE (2.0)
#   watchdog check-config  deploy/config.example.yaml, with that binary
#
# Run from anywhere in the repo, as root (or with sudo) on Debian: installs
# the Debian packages `prometheus` (promtool) and `systemd` (systemd-analyze)
# when their tools are missing. Needs Go to build ./cmd/watchdog.
#
# Environment: MAX_EXPOSURE (default 2.0); REQUIRE_BINARY=1 fails instead of
# warning when ./cmd/watchdog does not build.
set -euo pipefail

cd "$(dirname "$0")/.."

MAX_EXPOSURE="${MAX_EXPOSURE:-2.0}"
REQUIRE_BINARY="${REQUIRE_BINARY:-0}"
UNIT=deploy/systemd/watchdog.service
DROPINS=deploy/systemd/watchdog.service.d
RULES=deploy/prometheus/alerts.yml
RULE_TESTS=deploy/prometheus/alerts_test.yml
EXAMPLE_CONFIG=deploy/config.example.yaml
UNIT_BINARY=/usr/local/bin/watchdog

checked=()   # one line per passed check, printed at the end
warnings=()

say() { printf '==> %s\n' "$*"; }
fail() { printf 'deploy-check: FAIL: %s\n' "$*" >&2; exit 1; }
warn() { printf 'deploy-check: WARN: %s\n' "$*" >&2; warnings+=("$*"); }

work="$(mktemp -d "${TMPDIR:-/tmp}/deploy-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# --- Tools --------------------------------------------------------------------

# install_missing TOOL=PACKAGE...: installs the packages of the missing tools
# with one apt-get update.
install_missing() {
	local pkgs=() pair
	for pair in "$@"; do
		command -v "${pair%%=*}" >/dev/null 2>&1 || pkgs+=("${pair#*=}")
	done
	[ "${#pkgs[@]}" -eq 0 ] && return 0
	local sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || fail "need root (or sudo) to install: ${pkgs[*]}"
		sudo=sudo
	fi
	command -v apt-get >/dev/null 2>&1 || fail "no apt-get: install ${pkgs[*]} by hand"
	say "installing Debian packages: ${pkgs[*]}"
	# Do not let the packages' maintainer scripts start services (the
	# prometheus package would start a Prometheus server): a policy-rc.d
	# that says no, only if the host has none, removed afterwards.
	local policy=/usr/sbin/policy-rc.d made_policy=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
		$sudo chmod 0755 "$policy"
		made_policy=1
	fi
	local rc=0
	{ $sudo apt-get update -qq &&
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; } || rc=$?
	[ "$made_policy" -eq 1 ] && $sudo rm -f "$policy"
	[ "$rc" -eq 0 ] || fail "apt-get install ${pkgs[*]} failed (exit $rc)"
}

install_missing promtool=prometheus systemd-analyze=systemd
command -v go >/dev/null 2>&1 || fail "go not found: Go is needed to build the binary the unit runs"

say "tools: $(promtool --version 2>&1 | head -1); $(systemd-analyze --version | head -1); $(go version)"

# --- Prometheus rules ---------------------------------------------------------

say "promtool check rules $RULES"
promtool check rules "$RULES"
checked+=("promtool check rules $RULES")

say "promtool test rules $RULE_TESTS"
promtool test rules "$RULE_TESTS"
checked+=("promtool test rules $RULE_TESTS: $(grep -c '^  - name:' "$RULE_TESTS") cases")

# --- The binary ---------------------------------------------------------------

bin="$work/bin/watchdog"
say "go build ./cmd/watchdog"
if go build -o "$bin" ./cmd/watchdog 2>"$work/build.log"; then
	binary_note="ExecStart=$UNIT_BINARY verified as the binary built from ./cmd/watchdog"
	say "watchdog check-config $EXAMPLE_CONFIG"
	"$bin" check-config "$EXAMPLE_CONFIG"
	checked+=("watchdog check-config $EXAMPLE_CONFIG")
	if "$bin" serve --help >"$work/serve-help" 2>&1; then
		grep -q -- '--config' "$work/serve-help" || fail "\`watchdog serve --help\` does not list --config, which the unit's ExecStart passes"
		checked+=("watchdog serve accepts --config (the unit's ExecStart)")
	else
		warn "\`watchdog serve\` is not available yet: the unit's command line is unchecked"
	fi
else
	sed 's/^/    /' "$work/build.log" | head -20 >&2
	[ "$REQUIRE_BINARY" = 1 ] && fail "./cmd/watchdog does not build"
	warn "./cmd/watchdog does not build: ExecStart verified against a stand-in executable, check-config skipped"
	mkdir -p "$(dirname "$bin")"
	printf '#!/bin/sh\nexit 0\n' >"$bin"
	chmod 0755 "$bin"
	binary_note="ExecStart=$UNIT_BINARY verified as a STAND-IN executable (the binary did not build)"
fi

# --- systemd ------------------------------------------------------------------

# stage NAME [DROPIN]: copies the unit (and one drop-in) into a directory of
# their own, so that no other drop-in in deploy/systemd/ is picked up, with
# ExecStart's binary replaced by $bin; prints the unit's path.
stage() {
	local dir="$work/units/$1" dropin="${2:-}"
	mkdir -p "$dir"
	grep -c "^ExecStart=$UNIT_BINARY " "$UNIT" | grep -qx 1 ||
		fail "$UNIT: expected exactly one line 'ExecStart=$UNIT_BINARY ...'"
	sed "s|^ExecStart=$UNIT_BINARY |ExecStart=$bin |" "$UNIT" >"$dir/watchdog.service"
	if [ -n "$dropin" ]; then
		mkdir -p "$dir/watchdog.service.d"
		# shellcheck disable=SC2086 # "all" is a list of files
		cp $dropin "$dir/watchdog.service.d/"
	fi
	printf '%s\n' "$dir/watchdog.service"
}

combos=("unit")
for f in "$DROPINS"/*.conf; do
	[ -e "$f" ] && combos+=("$f")
done
# Every example drop-in at once: what `systemd-analyze security --offline=yes
# deploy/systemd/watchdog.service` rates when run in this repository, where
# the drop-in directory sits beside the unit.
combos+=("all")

for combo in "${combos[@]}"; do
	if [ "$combo" = unit ]; then
		name="watchdog.service"
		unit="$(stage plain)"
	elif [ "$combo" = all ]; then
		name="watchdog.service + every example drop-in"
		unit="$(stage all "$(printf '%s ' "$DROPINS"/*.conf)")"
	else
		name="watchdog.service + $(basename "$combo")"
		unit="$(stage "$(basename "$combo" .conf)" "$combo")"
	fi

	say "systemd-analyze verify: $name"
	if ! out="$(systemd-analyze verify --man=no "$unit" 2>&1)" || [ -n "$out" ]; then
		printf '%s\n' "$out" >&2
		fail "systemd-analyze verify: $name"
	fi
	checked+=("systemd-analyze verify: $name (clean)")

	say "systemd-analyze security --offline=yes: $name"
	report="$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1)" || true
	exposure="$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\) .*/\1/p')"
	if [ -z "$exposure" ]; then
		printf '%s\n' "$report" >&2
		fail "no 'Overall exposure level' line in the security report of $name"
	fi
	if awk -v e="$exposure" -v max="$MAX_EXPOSURE" 'BEGIN { exit !(e > max) }'; then
		printf '%s\n' "$report" | grep '✗' >&2 || true
		fail "$name: exposure $exposure is above $MAX_EXPOSURE"
	fi
	printf '    exposure %s (max %s)\n' "$exposure" "$MAX_EXPOSURE"
	checked+=("systemd-analyze security: $name: exposure $exposure <= $MAX_EXPOSURE")
done
checked+=("$binary_note")

# --- Summary ------------------------------------------------------------------

echo
echo "deploy-check: OK"
for c in "${checked[@]}"; do
	printf '  ok    %s\n' "$c"
done
for w in "${warnings[@]+"${warnings[@]}"}"; do
	printf '  WARN  %s\n' "$w"
done
echo "  not checked here: that the sandbox lets the daemon start (needs systemd as PID 1; after install, see deploy/systemd/README.md \"Check it\")"
