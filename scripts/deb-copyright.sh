#!/usr/bin/env bash
# deb-copyright.sh BINARY: the Debian copyright file of the package that
# ships BINARY (/usr/share/doc/watchdog-sidecar/copyright), on stdout.
# The binary is statically linked with the Go modules `go version -m`
# lists: each is named with its version and license, and the license
# texts that ask to be reproduced in a binary distribution (MIT, BSD, ISC)
# follow in full, from the module cache the build read them from.
set -euo pipefail

bin=${1:?usage: deb-copyright.sh BINARY}
modcache=$(go env GOMODCACHE)

# The module cache's spelling of a path: capitals as !lower.
escape() { sed -E 's/([A-Z])/!\L\1/g' <<<"$1"; }

license_file() {
	local dir=$1 f
	for f in LICENSE LICENSE.txt LICENSE.md LICENCE COPYING LICENSE-MIT; do
		if [ -f "$dir/$f" ]; then
			echo "$dir/$f"
			return
		fi
	done
}

classify() {
	local f=$1
	if grep -q 'Apache License' "$f" && grep -q 'Version 2.0' "$f"; then
		if grep -q 'Permission is hereby granted, free of charge' "$f"; then echo "MIT and Apache-2.0"; else echo "Apache-2.0"; fi
	elif grep -q 'Permission is hereby granted, free of charge' "$f"; then echo "MIT"
	elif grep -q 'Redistribution and use in source and binary forms' "$f"; then
		if grep -qi 'Neither the name' "$f"; then echo "BSD-3-clause"; else echo "BSD-2-clause"; fi
	elif grep -q 'Permission to use, copy, modify, and/or distribute' "$f"; then echo "ISC"
	elif grep -q 'Mozilla Public License' "$f"; then echo "MPL-2.0"
	else echo "see below"
	fi
}

cat <<'HEAD'
watchdog-sidecar: the watchdog daemon and command line

Copyright 2026 the watchdog maintainers.
No license has been published for watchdog's own code yet: this package
is distributed as built, and grants no rights beyond installing and
running it.

/usr/bin/watchdog is statically linked with the Go standard library
(BSD-3-clause, Copyright The Go Authors) and with these Go modules, each
under its own license:

HEAD

texts=$(mktemp)
trap 'rm -f "$texts"' EXIT
{
	echo
	echo "--- the Go standard library, $(go env GOVERSION) (BSD-3-clause) ---"
	echo
	sed 's/[[:space:]]*$//' "$(go env GOROOT)/LICENSE"
} >>"$texts"
while read -r path version; do
	dir="$modcache/$(escape "$path")@$(escape "$version")"
	f=$(license_file "$dir")
	if [ -z "$f" ]; then
		echo "deb-copyright.sh: no license file for $path $version in $dir" >&2
		exit 1
	fi
	lic=$(classify "$f")
	echo "  $path $version: $lic"
	case $lic in
	Apache-2.0 | MPL-2.0) ;; # in /usr/share/common-licenses
	*)
		{
			echo
			echo "--- $path $version ($lic) ---"
			echo
			sed 's/[[:space:]]*$//' "$f"
		} >>"$texts"
		;;
	esac
done < <(go version -m "$bin" | awk '$1 == "dep" { print $2, $3 }')

cat <<'MID'

On Debian systems the complete text of the Apache License, Version 2.0
is in /usr/share/common-licenses/Apache-2.0, and that of the Mozilla
Public License 2.0 in /usr/share/common-licenses/MPL-2.0. The other
licenses ask that their text go with the binary; each follows, as its
module ships it.
MID
cat "$texts"
