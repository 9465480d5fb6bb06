#!/usr/bin/env bash
# deb-changelog.sh VERSION MAINTAINER: the Debian changelog of a native
# package built from this checkout (/usr/share/doc/watchdog-sidecar/
# changelog.gz, gzipped by the Makefile), on stdout: one entry for the
# version built, dated by its commit (SOURCE_DATE_EPOCH), naming the
# commit; the project's history is its git log and the docs/adr records.
set -euo pipefail

version=${1:?usage: deb-changelog.sh VERSION MAINTAINER}
maintainer=${2:?usage: deb-changelog.sh VERSION MAINTAINER}
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
when=$(LC_ALL=C date -u -R -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")

cat <<CHANGELOG
watchdog-sidecar ($version) unstable; urgency=medium

  * Built from commit $commit.
  * The changes are the project's git history; the decisions behind them
    are docs/adr.

 -- $maintainer  $when
CHANGELOG
