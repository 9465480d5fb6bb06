# make test: everything CI runs, installing what it needs first.
GO            ?= go
GOBIN         := $(shell $(GO) env GOPATH)/bin
STATICCHECK   := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
APT_PACKAGES  := gcc libc6-dev postgresql prometheus prometheus-alertmanager chromium systemd lintian
# The API contract's outside checkers (issue 40), from the npm registry,
# pinned: Redocly's linter and Stoplight's Prism (5.14.2, its last release
# that runs on the Node.js 20 of this machine kind). Installed under
# .tools/ once per version pair; `make test` lints the OpenAPI document
# with the one and runs test/e2e's proxy test (WATCHDOG_PRISM) with the other.
REDOCLY_VERSION := 2.77.0
PRISM_VERSION   := 5.14.2
NODE_TOOLS      := $(CURDIR)/.tools/node-redocly-$(REDOCLY_VERSION)-prism-$(PRISM_VERSION)
REDOCLY         := $(NODE_TOOLS)/node_modules/.bin/redocly
PRISM           := $(NODE_TOOLS)/node_modules/.bin/prism
# This checkout's version (scripts/version.sh: git describe, as a Debian
# version), stamped into every binary the Makefile builds; `make deb
# VERSION=1.2.3` overrides it.
VERSION       := $(shell ./scripts/version.sh)
LDFLAGS_VERSION := -X main.version=$(VERSION)

.PHONY: node-tools openapi-check test tools deps fmt-check vet staticcheck deploy-check deb deb-test unit e2e fuzz build bench bench-pg openapi

test: deps tools node-tools fmt-check vet staticcheck openapi-check deploy-check deb-test unit fuzz

# Debian packages the tests use (gcc for the race detector; postgresql,
# whose initdb and server internal/testenv starts for store/postgres; prometheus,
# whose server deploy/realdata_test.go starts and whose promtool
# deploy-check runs; prometheus-alertmanager, which
# deploy/alerting_doc_test.go runs with docs/alerting.md's configuration;
# chromium, the headless browser of test/e2e/page_browser_test.go;
# systemd, whose systemd-analyze deploy-check and deb-test run; lintian,
# Debian's package checker, which deb-test runs),
# installed only when missing. A policy-rc.d that says
# no keeps the packages' maintainer scripts from starting their services
# (the tests start their own), only if the host has none.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		policy=/usr/sbin/policy-rc.d; made=0; \
		if [ ! -e $$policy ]; then printf '#!/bin/sh\nexit 101\n' | $$SUDO tee $$policy >/dev/null && $$SUDO chmod 0755 $$policy && made=1; fi; \
		rc=0; { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; } || rc=$$?; \
		if [ $$made = 1 ]; then $$SUDO rm -f $$policy; fi; \
		exit $$rc; \
	fi

# Go tools, pinned.
node-tools: $(REDOCLY)
$(REDOCLY):
	@command -v npm >/dev/null 2>&1 || { echo "installing: nodejs npm"; apt-get install -y -qq nodejs npm; }
	REDOCLY_TELEMETRY=off npm install --no-audit --no-fund --loglevel=error --prefix $(NODE_TOOLS) @redocly/cli@$(REDOCLY_VERSION) @stoplight/prism-cli@$(PRISM_VERSION)

# The OpenAPI document linted by Redocly's recommended rules: no error
# (the one warning left is info-license: no license is published yet).
openapi-check: node-tools
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint --format=stylish docs/reference/openapi.json

tools: $(STATICCHECK)
$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

fmt-check:
	@out="$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck: tools
	$(STATICCHECK) ./...

# systemd-analyze verify + exposure rating, promtool check/test rules
# (installs the Debian packages systemd and prometheus when missing).
deploy-check:
	REQUIRE_BINARY=1 ./scripts/deploy-check.sh

# The race detector changes allocation counts, so the probe's
# zero-allocation tests run once more without it. test/e2e (the built
# binary driven end to end; several minutes on a quiet 2-CPU machine,
# more under -race and load) would hit go test's default 10-minute
# ceiling per package on a busy machine: TESTTIMEOUT is a ceiling, never
# a budget a passing run comes near.
TESTTIMEOUT ?= 45m
unit:
	WATCHDOG_PRISM='$(PRISM)' $(GO) test -race -count=1 -timeout $(TESTTIMEOUT) ./...
	$(GO) test -count=1 -run 'Allocat' ./probe/

# The end-to-end tests alone (test/e2e), without the race detector;
# cmd/watchdog's own tests are the CLI's unit tests, in-process.
e2e:
	WATCHDOG_PRISM='$(PRISM)' $(GO) test -count=1 -timeout $(TESTTIMEOUT) ./test/e2e/

# Each fuzz target for a bounded time (FUZZTIME), on top of its seed
# corpus, which `unit` already runs as plain tests. A failure leaves its
# input under the package's testdata/fuzz/ to commit as a regression case.
# Each target runs a number of executions sized to about 10 s here, not a
# duration: Go's fuzzer before 1.27 can fail a run bounded by -fuzztime
# DURATION at its deadline with "context deadline exceeded" and no input
# (golang/go#75804, a race in its coordinator); a count has no deadline to
# race. FUZZTIME=1m (a duration, or Nx) overrides every target's budget.
FUZZTIME ?=
FUZZ_TARGETS := ./config/:FuzzParse:60000x ./wire/:FuzzRegister:30000x ./wire/:FuzzTransition:5000x ./state/:FuzzReasonCode:400000x ./probe/:FuzzCheckArtifacts:60000x
#
# A run that fails without writing an input to testdata/fuzz found
# nothing (that race, under a duration): it is repeated once; a real
# failure always leaves its input, and fails the target.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${rest#*:}; \
		if [ -n '$(FUZZTIME)' ]; then budget='$(FUZZTIME)'; fi; \
		corpus=$$pkg/testdata/fuzz/$$name; \
		echo "fuzz $$name ($$pkg, $$budget)"; \
		before=$$(ls $$corpus 2>/dev/null | wc -l); \
		if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg; then \
			after=$$(ls $$corpus 2>/dev/null | wc -l); \
			if [ "$$after" != "$$before" ]; then echo "fuzz $$name: new failing input in $$corpus"; exit 1; fi; \
			echo "fuzz $$name: failed without a failing input (see above); once more"; \
			$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg; \
		fi; \
	done

# The OpenAPI document, written from the code (internal/openapidoc); its
# test fails until this is run after a route or a wire type changed.
openapi:
	$(GO) test ./internal/openapidoc -run TestDocumentIsTheCodes -update -count=1
	$(GO) test ./internal/openapidoc -count=1

build:
	$(GO) build -ldflags '$(LDFLAGS_VERSION)' -o bin/watchdog ./cmd/watchdog

# The Debian package, dist/watchdog-sidecar_VERSION_ARCH.deb (ADR-0046):
# the binary (static, so it runs on any glibc; version stamped), the unit
# with ExecStart at /usr/bin/watchdog, the example config with store.dsn
# absolute (the command line reads it from any directory) as a conffile,
# /var/lib/watchdog, the example drop-ins, and the maintainer scripts in
# deploy/deb/ (the watchdog user). nfpm is pinned and run by `go run`,
# which caches its build and keeps its dependencies out of go.mod.
NFPM_VERSION := v2.45.2
NFPM         := $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
DEB_ARCH     := $(shell $(GO) env GOARCH)
DEB          := dist/watchdog-sidecar_$(VERSION)_$(DEB_ARCH).deb
UNIT_BINARY  := /usr/local/bin/watchdog
deb:
	@test -n '$(VERSION)' || { echo "no version: scripts/version.sh failed (see above)"; exit 1; }
	rm -rf dist/deb dist/watchdog-sidecar_*.deb
	mkdir -p dist/deb
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS_VERSION)' -o dist/deb/watchdog ./cmd/watchdog
	sed 's|^ExecStart=$(UNIT_BINARY) |ExecStart=/usr/bin/watchdog |' deploy/systemd/watchdog.service >dist/deb/watchdog.service
	grep -q '^ExecStart=/usr/bin/watchdog ' dist/deb/watchdog.service || { echo "deploy/systemd/watchdog.service: no 'ExecStart=$(UNIT_BINARY) ' line to point at /usr/bin/watchdog"; exit 1; }
	sed 's|^  dsn: ./watchdog.db$$|  dsn: /var/lib/watchdog/watchdog.db|' deploy/config.example.yaml >dist/deb/config.yaml
	grep -q '^  dsn: /var/lib/watchdog/watchdog.db$$' dist/deb/config.yaml || { echo "deploy/config.example.yaml: no '  dsn: ./watchdog.db' line to make absolute"; exit 1; }
	./scripts/deb-copyright.sh dist/deb/watchdog >dist/deb/copyright
	SOURCE_DATE_EPOCH="$$(git log -1 --format=%ct 2>/dev/null || date +%s)" \
		./scripts/deb-changelog.sh '$(VERSION)' "$$(sed -n 's/^maintainer: //p' deploy/deb/nfpm.yaml)" | gzip -9n >dist/deb/changelog.gz
	VERSION='$(VERSION)' DEB_ARCH='$(DEB_ARCH)' SOURCE_DATE_EPOCH="$$(git log -1 --format=%ct 2>/dev/null || date +%s)" \
		$(NFPM) package --config deploy/deb/nfpm.yaml --packager deb --target $(DEB)

# Installs the package with dpkg -i, checks what it put where (binary and
# its version, unit by systemd-analyze verify, conffile, user, state
# directory), reinstalls it over an edited config, removes it and purges
# it (deploy/deb_test.go). Needs root; fails rather than touch a host
# where watchdog is already installed.
deb-test: deb
	WATCHDOG_DEB='$(CURDIR)/$(DEB)' $(GO) test -count=1 -v -run '^TestDebPackage$$' ./deploy/

# The bench on the real binary (docs/bench.md): issue 13's figures beside
# monit, then issue 15's PostgreSQL beside SQLite; about 8 minutes, never
# part of test. BENCH_FLAGS go to the driver, e.g. BENCH_FLAGS='-run deaths'.
bench:
	./scripts/bench.sh $(BENCH_FLAGS)

# The PostgreSQL-beside-SQLite part alone (3 to 6 minutes), on a
# throwaway cluster, or on a server of yours with
# BENCH_FLAGS='-pg-dsn postgres://…'.
bench-pg:
	./scripts/bench.sh -run stores $(BENCH_FLAGS)
