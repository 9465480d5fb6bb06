#!/bin/sh
# version.sh: this checkout's version, as `git describe` tells it, in the
# form a Debian package version takes (ADR-0046). `make build` and
# `make deb` stamp it into the binary (`watchdog version`, the
# watchdog_build_info metric) and `make deb` names the package with it, so
# the three say the same thing.
#
#   tag v1.2.0, on it             1.2.0
#   5 commits after v1.2.0        1.2.0+5.g1a2b3c4
#   tag v1.3.0-rc1                1.3.0~rc1        (sorts before 1.3.0)
#   no v* tag: commit count       0.0.0+449.g1a2b3c4 (sorts before any tag)
#   uncommitted changes           … .dirty         (1.2.0+dirty on a tag)
#   no git at all                 0.0.0+unknown
set -eu
cd "$(dirname "$0")/.."

dirty=""
if ! git diff --quiet HEAD -- 2>/dev/null; then
	dirty=dirty
fi

if desc="$(git describe --tags --match 'v[0-9]*' --abbrev=7 2>/dev/null)"; then
	case "$desc" in
	*-[0-9]*-g[0-9a-f]*)
		# v1.2.0-5-g1a2b3c4: the tag, commits since, the commit.
		rest="${desc%-*}"             # v1.2.0-5
		hash="${desc##*-}"            # g1a2b3c4
		count="${rest##*-}"           # 5
		tag="${rest%-*}"              # v1.2.0
		meta="$count.$hash"
		;;
	*)
		tag="$desc"
		meta=""
		;;
	esac
	# A hyphen in the tag would read as a Debian revision: ~ sorts a
	# pre-release before its release, as a reader expects.
	upstream="$(printf '%s' "${tag#v}" | tr '-' '~')"
elif count="$(git rev-list --count HEAD 2>/dev/null)"; then
	upstream="0.0.0"
	meta="$count.g$(git rev-parse --short=7 HEAD)"
else
	echo "0.0.0+unknown"
	exit 0
fi

if [ -n "$dirty" ]; then
	meta="${meta:+$meta.}$dirty"
fi
version="$upstream${meta:++$meta}"

# A Debian upstream version: a digit first, then alphanumerics and . + ~.
if ! printf '%s\n' "$version" | grep -Eq '^[0-9][A-Za-z0-9.+~]*$'; then
	echo "version.sh: '$version' (from git describe '${desc:-}') is no Debian version: tag releases vMAJOR.MINOR.PATCH" >&2
	exit 1
fi
printf '%s\n' "$version"
