# make test: everything CI runs, installing what it needs first.
GO            ?= go
GOBIN         := $(shell $(GO) env GOPATH)/bin
STATICCHECK   := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
APT_PACKAGES  := gcc libc6-dev prometheus-alertmanager

.PHONY: test tools deps fmt-check vet staticcheck deploy-check unit fuzz build bench

test: deps tools fmt-check vet staticcheck deploy-check unit fuzz

# Debian packages the tests use (gcc for the race detector,
# prometheus-alertmanager for the push's end-to-end test and amtool), installed
# only when missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing; \
	fi

# Go tools, pinned.
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
# zero-allocation tests run once more without it.
unit:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'Allocat' ./probe/

# Each fuzz target for a bounded time (FUZZTIME), on top of its seed
# corpus, which `unit` already runs as plain tests. A failure leaves its
# input under the package's testdata/fuzz/ to commit as a regression case.
FUZZTIME ?= 10s
FUZZ_TARGETS := ./config/:FuzzParse ./wire/:FuzzRegister ./wire/:FuzzTransition ./state/:FuzzReasonCode ./probe/:FuzzCheckArtifacts
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

build:
	$(GO) build -o bin/watchdog ./cmd/watchdog

# The issue-13 bench on the real binary beside monit (docs/bench.md); never
# part of test. BENCH_FLAGS go to the driver, e.g. BENCH_FLAGS='-run deaths'.
bench:
	./scripts/bench.sh $(BENCH_FLAGS)
