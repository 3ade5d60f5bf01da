# Switchyard — two commands: `make run` and `make test`.
GO      ?= go
BIN     := build/bin
WASM    := build/wasm
TESTWASM := build/testdata
GUEST   := GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared
GUEST_LD := -s -w
GUEST_SRC := $(shell find abi sdk plugins -name '*.go' -o -name '*.json') go.mod go.sum Makefile

.PHONY: all build wasm modules testwasm examples gateway syctl run deps test vet gotest clients bench clean

all: build

build: wasm examples gateway syctl

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
testwasm: $(TESTWASM)/openai-variant.wasm $(TESTWASM)/failing.wasm $(TESTWASM)/testplugin.wasm $(TESTWASM)/conformance.wasm

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

# The ABI conformance kit's guest (abi/conformance).
$(TESTWASM)/conformance.wasm: $(GUEST_SRC)
	@mkdir -p $(TESTWASM)
	$(GUEST) -ldflags "$(GUEST_LD)" -o $@ ./abi/conformance/guest

gateway:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/switchyard ./cmd/switchyard

syctl:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/syctl ./cmd/syctl

# Only what the gateway runs: its first-party modules and the binary, built
# side by side (one Go build per module; make runs them in parallel).
run:
	$(MAKE) -j$(JOBS) modules gateway
	$(BIN)/switchyard

JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# What a fresh machine lacks for the tests (clang and lld for the C
# example, Node.js and npm for the npm client and the AssemblyScript example).
deps:
	./scripts/install-deps.sh

test: deps
	$(MAKE) -j$(JOBS) build
	$(MAKE) vet clients gotest

vet:
	@test -z "$$(gofmt -l abi sdk host cmd plugins examples)" || (gofmt -l abi sdk host cmd plugins examples; echo "gofmt needed"; exit 1)
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./sdk/... ./plugins/... ./abi/conformance/guest

# The npm `openai` client's dependencies, for the client tests.
clients:
	cd examples/clients/node && npm ci --no-audit --no-fund --loglevel=error

gotest:
	$(GO) test -race -count=1 ./...

# Hot-path Go benchmarks (among them each module host function's per-call
# cost, BenchmarkHostFunctions in host/wasm), the per-call cost of one plugin
# through the native ABI (Go, C) and through Extism (AssemblyScript), then
# the load benchmark.
bench:
	$(MAKE) -j$(JOBS) build
	$(GO) test -run=NONE -bench=. -benchmem -benchtime=2000x ./host/...
	$(GO) test -run=NONE -bench=PluginCall -benchmem -benchtime=2000x ./examples/
	$(GO) run ./cmd/loadbench

clean:
	rm -rf build
