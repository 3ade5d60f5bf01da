# Switchyard — two commands: `make run` and `make test`.
GO      ?= go
BIN     := build/bin
WASM    := build/wasm
TESTWASM := build/testdata
GUEST   := GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared
GUEST_LD := -s -w
GUEST_SRC := $(shell find abi sdk plugins -name '*.go' -o -name '*.json' -o -name '*.html') go.mod go.sum Makefile

.PHONY: all build seeds wasm modules testwasm examples console gateway syctl run deps test vet gotest clients bench bench-1m clean

all: build

build: wasm examples console gateway syctl
	$(MAKE) --no-print-directory seeds

# The gateway's record of the seeds it validated (host/modules/stamp.go):
# a broken module fails the build here, and a start on a fresh data
# directory does not validate the seeds again. Only changed seeds are
# validated.
seeds:
	$(BIN)/switchyard -validate-seeds $(WASM)

# Example plugins in three ways (Go native, C native, AssemblyScript via
# Extism); see docs/plugins.md. Needs clang-14, lld-14 and npm.
examples:
	$(MAKE) -C examples

## Wasm modules: every folder under plugins/ with a manifest.json.
PLUGINS := $(patsubst plugins/%/manifest.json,%,$(wildcard plugins/*/manifest.json))
# Every module the tests load: the gateway's and the test-only ones.
wasm: modules testwasm

# The gateway's modules (what `make run` seeds).
modules: $(foreach p,$(PLUGINS),$(WASM)/$(p).wasm $(WASM)/$(p).json)

## Modules only the tests load.
testwasm: $(TESTWASM)/openai-variant.wasm $(TESTWASM)/failing.wasm $(TESTWASM)/testplugin.wasm $(TESTWASM)/conformance.wasm $(TESTWASM)/tooltest.wasm \
	$(TESTWASM)/broken.wasm $(TESTWASM)/broken-noshared.wasm

$(WASM)/%.wasm: $(GUEST_SRC)
	@mkdir -p $(WASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./plugins/$*

$(WASM)/%.json: plugins/%/manifest.json
	@mkdir -p $(WASM)
	cp $< $@

# A second build of the OpenAI adapter that stamps a different build id: the
# tests swap it in to prove translation really runs inside the module.
$(TESTWASM)/openai-variant.wasm: $(GUEST_SRC)
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD) -X main.build=openai/variant" -o $@ ./plugins/openai

$(TESTWASM)/failing.wasm: $(GUEST_SRC) host/wasm/testdata/failing/main.go
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./host/wasm/testdata/failing

$(TESTWASM)/testplugin.wasm: $(GUEST_SRC) host/pipeline/testdata/testplugin/main.go
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./host/pipeline/testdata/testplugin

# A server-tool module with a fee (host/tools/testdata/tooltest).
$(TESTWASM)/tooltest.wasm: $(GUEST_SRC) host/tools/testdata/tooltest/main.go
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./host/tools/testdata/tooltest

# A plugin the guest check must fail (abi/conformance/testdata/broken):
# post_response panics, post_chunk is missing; and the same built without
# -buildmode=c-shared, so every call traps.
$(TESTWASM)/broken.wasm: $(GUEST_SRC)
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./abi/conformance/testdata/broken

$(TESTWASM)/broken-noshared.wasm: $(GUEST_SRC)
	@mkdir -p $(TESTWASM)
	GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -ldflags "$(GUEST_LD)" -o $@ ./abi/conformance/testdata/broken

# The ABI conformance kit's guest (abi/conformance).
$(TESTWASM)/conformance.wasm: $(GUEST_SRC)
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./abi/conformance/guest

## The web console (console/, Vite + TypeScript), built into
## host/console/static/app, which the gateway embeds: build it before the
## gateway. Without npm it is skipped with a warning and /console says how
## to build it (`make run` needs only Go); `make test` installs npm first.
CONSOLE_OUT := host/console/static/app/index.html
CONSOLE_SRC := $(shell find console/src -type f 2>/dev/null) console/index.html console/vite.config.ts console/tsconfig.json console/package-lock.json

console:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(CONSOLE_OUT); \
	else echo "console: npm not found; building the gateway without the web console (apt-get install nodejs npm)" >&2; fi

$(CONSOLE_OUT): $(CONSOLE_SRC) console/node_modules/.package-lock.json
	cd console && npm run --silent build

# --prefer-offline: the npm cache answers when it has the locked versions.
console/node_modules/.package-lock.json: console/package-lock.json
	cd console && npm ci --prefer-offline --no-audit --no-fund --loglevel=error
	@touch $@

# With modules already built (`make wasm gateway`), the new binary records
# them as validated too (as `seeds` does), so its start on a fresh data
# directory does not compile every seed with the interpreter: that took
# 1-2 s quiet (14 s loaded), peaked at 500 MB and left ~4 MiB more idle
# RSS. Not fatal here: under `make -j` a module may still be being
# written; `seeds` (make build, make run) is the check that fails a build.
gateway: console
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/switchyard ./cmd/switchyard
	-@if ls $(WASM)/*.json >/dev/null 2>&1; then $(BIN)/switchyard -validate-seeds $(WASM); fi

syctl:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/syctl ./cmd/syctl

# Only what the gateway runs: its first-party modules and the binary, built
# side by side (one Go build per module; make runs them in parallel).
run:
	$(MAKE) -j$(JOBS) modules gateway
	$(MAKE) --no-print-directory seeds
	$(BIN)/switchyard

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# What a fresh machine lacks for the tests (clang and lld for the C
# example, Node.js and npm for the npm client, the AssemblyScript example
# and the console, Chromium for the console's end-to-end test; PostgreSQL,
# Redis and nginx for the cluster-mode tests, which start their own
# servers — the system services are not started).
deps:
	./scripts/install-deps.sh

test: deps
	$(MAKE) -j$(JOBS) build
	$(MAKE) vet clients gotest

vet:
	@test -z "$$(gofmt -l abi sdk host cmd plugins examples)" || (gofmt -l abi sdk host cmd plugins examples; echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./sdk/... ./plugins/... ./abi/conformance/guest

# The npm `openai` client's dependencies, for the client tests, and npm
# `jsonrepair`, the response-healing plugin's anchor
# (plugins/response-healing/heal, TestAtLeastJSONRepair); Claude Code and
# the Codex CLI, each in its own directory (large native binaries), for
# TestClaudeCodeToolRoundTrip and TestCodexCLI.
clients:
	cd examples/clients/node && npm ci --no-audit --no-fund --loglevel=error
	cd examples/clients/node/claudecode && npm ci --no-audit --no-fund --loglevel=error
	cd examples/clients/node/codex && npm ci --no-audit --no-fund --loglevel=error
	cd examples/clients/node/webfetch && npm ci --no-audit --no-fund --loglevel=error
	cd examples/clients/node/moderation && npm ci --no-audit --no-fund --loglevel=error

gotest:
	$(GO) test -race -count=1 -timeout 45m ./...
	# The gateway's suite once more on PostgreSQL, the cluster store (one
	# throwaway server, a database per test gateway; docs/cluster.md).
	SWITCHYARD_TEST_STORE=postgres $(GO) test -count=1 -timeout 30m ./host/server/
	# host/sockio's raw system calls run only without -race (under it they
	# are syscall.Read and Write, which the detector understands): its own
	# tests once more without it.
	$(GO) test -count=1 ./host/sockio/

# Hot-path Go benchmarks (among them each module host function's per-call
# cost, BenchmarkHostFunctions in host/wasm), the per-call cost of one plugin
# through the native ABI (Go, C) and through Extism (AssemblyScript), the
# web, web-fetch, moderation, response-healing, context-compression and
# file-parser modules' per-call costs, then the load benchmark.
# ./host/... includes the cost of metrics, traces and request logs per
# request, off and on (host/telemetry: BenchmarkRequestTelemetry in
# process, BenchmarkChatOverLoopback end to end), and GET /generations and
# GET /activity on a store of a million records (host/activity).
bench:
	$(MAKE) -j$(JOBS) build
	# (The vector index's search benchmark builds graphs of 10k-50k nodes:
	# it runs once, at 20 lookups, below.)
	$(GO) test -run=NONE -bench=. -skip=VectorSearch -benchmem -benchtime=2000x ./host/... ./sdk/
	# A start on a fresh data dir, with the build's record of its seeds and without.
	$(GO) test -run=NONE -bench=FreshStart -benchmem -benchtime=3x ./host/modules/
	$(GO) test -run=NONE -bench=PluginCall -benchmem -benchtime=2000x ./examples/
	# The moderation module: precision and recall of its local engine per
	# category on its labelled sets (the first set; real inputs split dev,
	# held-out and fresh), then its per-call cost at 1, 10 and 100 KB
	# (clean, with personal data, and text that wakes every gated pass).
	$(GO) test -count=1 -run=TestEvalSet -v ./plugins/moderation/moderate/ | sed -n '/moderation local engine/,/end of moderation tables/p'
	# … beside its anchor on the same inputs, per input: npm
	# @presidio-dev/hai-guardrails' pattern guards (Presidio itself is a
	# Python package, and PyPI is out of reach: docs/plugins.md).
	@test -f examples/clients/node/moderation/node_modules/@presidio-dev/hai-guardrails/package.json || $(MAKE) --no-print-directory clients
	$(GO) test -count=1 -run=TestAnchorSideBySide -v ./plugins/moderation/moderate/ | sed -n '/local engine beside/,/end of moderation anchor table/p'
	$(GO) test -run=NONE -bench=Moderation -benchmem -benchtime=20x ./plugins/moderation/moderate/
	# The response-healing module: each category's repair rate on its
	# evaluation set (dev and held-out) beside npm jsonrepair's on the same
	# inputs, then its per-call cost at 1, 10 and 100 KB.
	@test -f examples/clients/node/node_modules/jsonrepair/package.json || $(MAKE) --no-print-directory clients
	$(GO) test -count=1 -run=TestEvalSet -v ./plugins/response-healing/heal/ | sed -n '/response-healing on its/,/held-out split held to/p'
	$(GO) test -run=NONE -bench=ResponseHealingModule -benchmem -benchtime=50x ./plugins/response-healing/healtest/
	# Heal's linearity: MB/s at 16 and 128 KiB of each adversarial shape.
	$(GO) test -run=NONE -bench=HealLinear -benchtime=20x ./plugins/response-healing/heal/ | grep -E 'MB/s'
	$(GO) test -run=NONE -bench=WebModule -benchmem -benchtime=2000x ./plugins/web/webtest/
	# The web-fetch module: words of the marked main content kept and
	# clutter per category (dev and held-out) beside Mozilla Readability +
	# turndown on the same pages, then its conversion at 10 KB, 100 KB and
	# 1 MB and one tool call through the module.
	@test -f examples/clients/node/webfetch/node_modules/@mozilla/readability/package.json || $(MAKE) --no-print-directory clients
	$(GO) test -count=1 -run=TestEvalSet -v ./plugins/web-fetch/fetch/ | sed -n '/web-fetch on its/,/held-out split held to/p'
	$(GO) test -run=NONE -bench=. -benchmem -benchtime=20x ./plugins/web-fetch/fetch/
	# The response cache: a hit, a miss and no cache, exact and semantic,
	# through the gateway on loopback, with a few entries and with 10k per
	# account (searched exactly and through the HNSW graph); then the
	# host's semantic lookup, exact and HNSW, in a partition of 10k entries
	# (1,536 and 256 dimensions), 20k and 50k (256); then the 1M figures
	# (make bench-1m; docs/response-cache.md#what-it-costs).
	$(GO) test -run=NONE -bench='ResponseCache$$' -benchmem -benchtime=200x ./plugins/response-cache/cache/
	$(GO) test -timeout 40m -run=NONE -bench=ResponseCacheAt10k -benchmem -benchtime=20x ./plugins/response-cache/cache/
	$(GO) test -timeout 60m -run=NONE -bench=VectorSearch -benchmem -benchtime=20x ./host/vecindex/
	$(MAKE) --no-print-directory bench-1m
	$(GO) test -run=NONE -bench=ContextCompressionModule -benchmem -benchtime=50x ./plugins/context-compression/cctest/
	$(GO) test -run=NONE -bench=FileParserModule -benchmem -benchtime=50x ./plugins/file-parser/fileparsertest/
	# The file-parser's pdf-text engine beside poppler's pdftotext on its
	# evaluation set: word and line-break agreement per producer, tuning
	# and held-out parts, two-column pages against its reading order
	# (pdftotext from poppler-utils: make deps).
	$(GO) test -count=1 -run=TestPdftotextAgreement -v ./plugins/file-parser/fileparser/ | grep -E 'vs pdftotext|pdftotext .*not installed'
	# The auto-router: its classifier's accuracy on the labelled prompt set,
	# one routing decision's cost through the module, and the trade-off →
	# average price and quality table over the default catalog.
	$(GO) test -count=1 -run=TestEvalSet -v ./plugins/auto-router/autoroute/ | sed -n '/local classifier/,/text-only/p'
	$(GO) test -run=NONE -bench=AutoRouterModule -benchmem -benchtime=200x ./plugins/auto-router/artest/
	$(GO) test -count=1 -run=TestTradeoffTable -v ./plugins/auto-router/autoroute/ | sed -n '/auto-router over/,/^ *10 /p'
	$(GO) run ./cmd/loadbench

# The response cache at a million entries in one account (about an
# hour on a loaded 2-core machine, nearly all of it the 1M-node graph's
# build; 3 GB of memory): the host's semantic
# lookup, exact scan and HNSW (the graph built in the background, its
# build time and recall reported), and an exact hit and miss through the
# gateway with a million answers in the account's kv scope
# (docs/performance.md, "Response cache at 1M").
bench-1m:
	SWITCHYARD_BENCH_1M=1 $(GO) test -timeout 90m -run=NONE -bench='VectorSearch/entries=1000000' -benchmem -benchtime=20x ./host/vecindex/
	SWITCHYARD_BENCH_1M=1 $(GO) test -timeout 60m -run=NONE -bench=ResponseCacheAt1M -benchmem -benchtime=20x ./plugins/response-cache/cache/

clean:
	rm -rf build host/console/static/app console/node_modules
