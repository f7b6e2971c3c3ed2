# The two commands of the README:
#   make demo   builds warden and the bundled tools, lists them, and calls a few
#   make test   runs every test: Go tests (unit, sandbox, real gopls, real MCP
#               clients), the MCP conformance suite and the MCP Inspector CLI
# `make serve` builds everything and serves the bundled tools over stdio.
# `make install` puts warden on PATH: go install into $(go env GOBIN), else
# $(go env GOPATH)/bin.

export GOTOOLCHAIN := local
GO ?= go

.PHONY: all build install tools demo serve test test-go test-race test-conformance bench bench-scale bench-peers cross release-snapshot release-check notices

all: build tools

build:
	$(GO) build -o bin/warden ./cmd/warden

# go install names no destination, so ask go where it put it.
install:
	$(GO) install ./cmd/warden
	@bin="$$($(GO) env GOBIN)"; [ -n "$$bin" ] || bin="$$($(GO) env GOPATH)/bin"; \
	echo "installed $$bin/warden"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "$$bin is not on your PATH: add it (export PATH=\"\$$PATH:$$bin\")";; esac

tools:
	$(GO) run ./cmd/build-tools -o bin/tools

demo: all
	bin/warden tools
	bin/warden call echo '{"text":"hello from the sandbox"}'
	bin/warden call jq '{"filter":"[.[] | select(.stars > 100) | .name]","input":[{"name":"wazero","stars":5000},{"name":"toy","stars":3}]}'
	bin/warden call hash '{"algorithms":["sha256"],"text":"warden"}'

serve: all
	bin/warden serve

test: all test-go test-race test-conformance

# Modules of their own (RATIONALE.md, "Guests and tools with their own
# go.mod"): ./... stops at their go.mod, so they are vetted and tested here.
# The Extism fixtures (runtime/testdata/extism) are built by the runtime's
# tests.
OWN_MODULES := tools-wasm/jq bench/benchtable bench/peers

test-go:
	$(GO) vet ./...
	$(GO) test ./...
	for m in $(OWN_MODULES); do $(GO) -C $$m vet ./... && $(GO) -C $$m test ./... || exit 1; done

# The packages whose state is shared between goroutines (sessions, the
# stdio and HTTP guards, the catalog and its background loads, the policy
# swapped on reload, capabilities with live config, the audit writer, the
# test PostgreSQL), under the race
# detector. Of runtime, the tests of its concurrent parts (instance pool,
# memory budget, sessions, lazy loads, idle release, deadlines) run under
# -race (under 2 minutes on two cores); the whole package does not fit:
# compiling its Go guests with wazero under -race takes over ten minutes.
RACE_PACKAGES := ./mcpserver ./internal/app ./internal/catalog ./internal/policy ./internal/approvals ./internal/tasks/... ./internal/ratestore ./internal/console ./internal/redact ./internal/oauth/... ./internal/observe ./internal/pgtest ./config ./hostfuncs/... ./tool/... ./internal/schema/...
RUNTIME_RACE_TESTS := TestDeadlineConcurrentHolds|TestBudget|TestEvictedRoomGoesToTheEvictor|TestCloseWaitsForSpares|TestSessionsStartWarm|TestExtismConcurrentCalls|TestResetAfterGrowth|TestConcurrentCalls|TestConcurrentFirstCallsLoadOnce|TestIdleRelease|TestLazyLoadFailure

test-race:
	$(GO) test -race $(RACE_PACKAGES)
	$(GO) test -race -run '$(RUNTIME_RACE_TESTS)' ./runtime

test-conformance: all
	WARDEN=$(CURDIR)/bin/warden .ci/conformance/run.sh
	WARDEN=$(CURDIR)/bin/warden .ci/conformance/inspector.sh

# The call-path table of docs/performance.md: warden beside a native go-sdk
# server (stdio, HTTP), and the fuel pass's overhead per guest, with ratios
# (a few minutes; not part of test). Run it on a quiet machine.
BENCH_COUNT ?= 3
bench: build
	WARDEN_BIN=$(CURDIR)/bin/warden $(GO) test ./bench -run '^$$' -bench 'Echo' -benchtime 2000x -count $(BENCH_COUNT) | tee bin/bench-echo.txt
	$(GO) test ./runtime/internal/instrument -run '^$$' -bench 'Interleaved' -benchtime 12x -count $(BENCH_COUNT) | tee bin/bench-fuel.txt
	$(GO) -C bench/benchtable run . $(CURDIR)/bin/bench-echo.txt $(CURDIR)/bin/bench-fuel.txt

# The scale and fair-share benchmarks of docs/performance.md (minutes; not
# part of test).
bench-scale:
	go test ./bench -run '^$$' -bench 'Startup|Sessions|FairShare' -benchtime 1x -timeout 60m

# The peers table of docs/performance.md: warden's stdio echo call beside the
# go-sdk, mark3labs/mcp-go and TypeScript SDK servers and the transport's
# floor, one raw client, three interleaved rounds (bench/peers; a few
# minutes, not part of test). The TypeScript SDK is installed from its
# lock file into bin/peers/ts, again only when the lock file changes.
# PEERS_ARGS adds flags (e.g. -rounds 1 -calls 1000).
PEERS := $(CURDIR)/bin/peers
PEERS_TS := bench/peers/servers/ts
PEERS_ARGS ?=
bench-peers: build tools $(PEERS)/ts/node_modules/.package-lock.json
	$(GO) -C bench/peers build -o $(PEERS)/ ./servers/floor ./servers/gosdk ./servers/mcpgo
	cp $(PEERS_TS)/server.mjs $(PEERS)/ts/
	$(GO) -C bench/peers run . -warden $(CURDIR)/bin/warden -tools $(CURDIR)/bin/tools -cache $(PEERS)/cache \
		-floor $(PEERS)/floor -gosdk $(PEERS)/gosdk -mcpgo $(PEERS)/mcpgo -ts $(PEERS)/ts/server.mjs \
		-bench $(PEERS)/bench.txt $(PEERS_ARGS) | tee $(PEERS)/table.txt

$(PEERS)/ts/node_modules/.package-lock.json: $(PEERS_TS)/package.json $(PEERS_TS)/package-lock.json
	mkdir -p $(PEERS)/ts
	cp $(PEERS_TS)/package.json $(PEERS_TS)/package-lock.json $(PEERS)/ts/
	cd $(PEERS)/ts && npm ci --ignore-scripts --no-audit --no-fund

# Every release target (.goreleaser.yaml) builds and vets: cross-compiles
# ./... and vets it with each GOOS/GOARCH, so code behind a build tag of
# another OS is type-checked here too (and the modules of OWN_MODULES that
# are host programs). Nothing runs: docs/platforms.md says which tests run
# where.
CROSS_TARGETS := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64 windows/arm64
CROSS_MODULES := bench/benchtable

cross:
	@set -e; for t in $(CROSS_TARGETS); do \
		echo "cross: $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) vet ./...; \
		for m in $(CROSS_MODULES); do \
			GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) -C $$m build ./...; \
			GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) -C $$m vet ./...; \
		done; \
	done

# The release tooling runs from the Go module proxy at pinned versions,
# nothing installed globally (RATIONALE.md, "Release and distribution").
GORELEASER := github.com/goreleaser/goreleaser/v2@v2.15.1
GO_LICENSES := github.com/google/go-licenses@v1.6.0

# A release dry run: every archive, checksums.txt, an SBOM per binary, the
# Homebrew cask and the winget manifest, into dist/; nothing is published.
# A clone without a remote (a local copy, a CI checkout of a bundle) gets
# the project's URL for GoReleaser's git checks, through git's environment
# config, so the commit and its date are stamped all the same.
release-snapshot:
	@if [ -z "$$(git remote)" ]; then \
		export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/warden-run/warden.git; \
	fi; \
	echo "$(GO) run $(GORELEASER) release --snapshot --clean"; \
	$(GO) run $(GORELEASER) release --snapshot --clean

release-check:
	$(GO) run $(GORELEASER) check

# THIRD_PARTY_NOTICES: the license of every module linked into warden on
# any release OS (procfs is Linux's only, mousetrap Windows's; the SDK
# bundle's vendored modules are among them), from the module cache, by
# go-licenses (built for this machine into bin/: under go run, GOOS would
# build it for the OS reported on): one report per GOOS, merged (a notice per module, sorted).
# Slow where the network is closed: go-licenses looks up each license's
# URL and waits for the lookup to fail. cmd/warden's TestThirdPartyNotices
# checks, offline, that the file names every module each target links.
NOTICE_OSES := linux darwin windows

notices:
	GOBIN=$(CURDIR)/bin $(GO) install $(GO_LICENSES)
	@set -e; for os in $(NOTICE_OSES); do \
		echo "notices: GOOS=$$os" >&2; \
		GOOS=$$os bin/go-licenses report --ignore github.com/warden-run/warden --template packaging/notices.tpl ./cmd/warden 2>/dev/null > bin/notices.$$os; \
	done; \
	{ cat packaging/notices-head.txt; \
	  cat $(NOTICE_OSES:%=bin/notices.%) | awk 'BEGIN { RS = "@@notice@@\n" } NF { gsub(/\n/, "\001"); print }' | LC_ALL=C sort -u | tr '\001' '\n'; \
	} > THIRD_PARTY_NOTICES
