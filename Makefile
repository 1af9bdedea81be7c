# Everything a developer or CI runs. `make help` lists the targets.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

TOOLS        := $(CURDIR)/.tools
TINYGO_PREFIX ?= $(TOOLS)/tinygo
BUILD        := $(CURDIR)/build
KWHOST       := $(BUILD)/kwhost
PREINIT      := $(BUILD)/preinit
PREFLIGHT    := $(BUILD)/yunikorn-user-info-preflight
# -scheduler=none: policies need no goroutines, and the default scheduler's start-up is most of the cost
# of a fresh instance (~100 us of ~140 us; docs/runtime.md "A fresh instance for every request"), which policy-server pays per request.
# --initial-memory: the linker otherwise leaves almost no heap after the stack and the data (regexp's
# unicode tables), so package initialisers already trigger a GC and a heap growth in every fresh instance;
# 384 KiB leaves room for requests up to ~150 KB with no collection: in a fresh instance TinyGo's first
# collection scans the ~135 KB of globals (a 40 KB Pod: ~900 -> ~550 us on wasmtime, ~480 -> ~180 us on wazero).
# -opt=2: TinyGo optimises for size (-opt=z) by default, and its inliner then leaves small hot functions
# (a bounds-checked byte test, a word load) as calls; -opt=2 makes every evaluation 9-19% faster on both
# engines (make bench, make bench-wasmtime) for a module ~180 KB larger.
# -panic=trap: a runtime panic (an index out of range) traps at once instead of calling the runtime to print
# a message; a function whose only calls are such panics then needs no GC stack frame, and TinyGo otherwise
# stores every pointer a loop carries into one on each iteration: the validating pass 25% faster in the
# guest, large requests 5-11% (make bench, by the min). The policy never panics (docs/rules.md "Bad input");
# should it, the host reports the trap with the names of the functions on the stack, as before.
TINYGO_FLAGS ?= -target=wasi -no-debug -opt=2 -scheduler=none -panic=trap -ldflags=-extldflags=--initial-memory=393216
# e2e.bats runs `$(KWCTL) run ...`: the real kwctl when it is installed, the project's host otherwise.
KWCTL        ?= $(shell command -v kwctl 2>/dev/null || echo $(KWHOST))
GOLANGCI_LINT := $(TOOLS)/bin/golangci-lint
GOLANGCI_LINT_VERSION := v2.9.0
# The workflow and Renovate linters, each installed into a directory named after its version, so that a
# version bump (Renovate edits these lines) installs the new one.
ACTIONLINT_VERSION := v1.7.12
ACTIONLINT    := $(TOOLS)/actionlint/$(ACTIONLINT_VERSION)/actionlint
# Renovate 39 is the last release that runs on Node.js 20 (40 needs 22, 44 needs 24).
RENOVATE_VERSION := 39.264.1
RENOVATE_CONFIG_VALIDATOR := $(TOOLS)/renovate/$(RENOVATE_VERSION)/renovate-config-validator

POLICY_SOURCES := $(wildcard *.go) go.mod go.sum $(shell find policy wapcguest -name '*.go')
HOST_SOURCES   := go.mod go.sum $(shell find internal cmd -name '*.go' -not -path '*/testdata/*' 2>/dev/null)

export GOFLAGS := -buildvcs=false

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_.-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# Checked on every run (a stamp lookup, well under a second once installed); the file only changes, and so
# only triggers a rebuild, when the TinyGo in use changes.
$(TOOLS)/tinygo.path: FORCE
	@mkdir -p $(TOOLS)
	@TINYGO_PREFIX=$(TINYGO_PREFIX) hack/install-tinygo.sh > $@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@

.PHONY: FORCE
FORCE:

.PHONY: tinygo
tinygo: $(TOOLS)/tinygo.path ## install TinyGo (uses tinygo >= 0.39 from PATH, else builds 0.41.0 into .tools/)
	@echo "tinygo: $$(cat $<)"

# The module TinyGo builds, before pre-initialisation.
$(BUILD)/policy.tinygo.wasm: $(POLICY_SOURCES) Makefile $(TOOLS)/tinygo.path
	@mkdir -p $(BUILD)
	$$(cat $(TOOLS)/tinygo.path) build -o $@ $(TINYGO_FLAGS) .

# Pre-initialised (cmd/preinit): TinyGo's start-up and every package initialiser run once here, and the
# module ships the memory they leave, so that a fresh instance (one per request in policy-server) starts
# ready. The tests and the benchmark run this module; the release publishes it annotated (annotated-policy.wasm).
policy.wasm: $(BUILD)/policy.tinygo.wasm $(PREINIT) ## build the policy module (TinyGo, then pre-initialised)
	$(PREINIT) -o $@ $<
	@echo "policy.wasm: $$(stat -c %s $@) bytes"

$(PREINIT): $(HOST_SOURCES)
	go build -o $@ ./cmd/preinit

$(KWHOST): $(HOST_SOURCES)
	go build -o $@ ./cmd/kwhost

.PHONY: host
host: $(KWHOST) ## build the local policy host (build/kwhost: kwctl run / demo)

# The pre-flight check operators run before installing the policy (released for linux/amd64 and arm64).
$(PREFLIGHT): $(HOST_SOURCES)
	go build -o $@ ./cmd/yunikorn-user-info-preflight

.PHONY: preflight
preflight: $(PREFLIGHT) ## build the pre-flight check (build/yunikorn-user-info-preflight; README "Pre-flight check")

.PHONY: demo
demo: policy.wasm $(KWHOST) ## a tour: each scenario of testdata/tour.json with the settings it needs, what it shows, and a table of outcomes
	@$(KWHOST) tour policy.wasm testdata/tour.json

.PHONY: test
# Each stage runs on its own, in this order, and the run ends with a table of stages and their times.
# release-rehearsal runs with REHEARSAL_E2E=0 here: it checks that the pulled module is byte for byte
# policy.wasm, which e2e-tests ran a few stages before (make release-rehearsal alone runs the suite again).
TEST_STAGES ?= lint unit-tests e2e-tests fuzz-short e2e-cluster e2e-kubewarden e2e-operators e2e-load e2e-yunikorn release-rehearsal
test: export REHEARSAL_E2E ?= 0
test: ## run every test (lint, unit, host, e2e, a short fuzz, a real control plane, operators, load and faults, YuniKorn in the loop, a release rehearsal), then a table of stage times
	@mkdir -p $(BUILD) && MAKE="$(MAKE)" PREBUILD=hack/prebuild.sh PREBUILD_LOG=$(abspath $(BUILD))/prebuild.log hack/stages.sh $(TEST_STAGES)

.PHONY: check
check: ## the day-to-day subset: unit tests and the e2e suite through policy.wasm (a few minutes)
	@MAKE="$(MAKE)" hack/stages.sh unit-tests e2e-tests

.PHONY: unit-tests
unit-tests: $(TOOLS)/tinygo.path ## native unit tests of the policy and the host
	TINYGO=$$(cat $(TOOLS)/tinygo.path) REQUIRE_TINYGO=1 go test -count=1 ./...

# The module the e2e suite runs: policy.wasm by default; the release runs the suite again on
# annotated-policy.wasm (what it pushes), and make release-rehearsal on the module it pulled back.
POLICY ?= policy.wasm

.PHONY: e2e-tests
e2e-tests: $(POLICY) $(KWHOST) ## e2e.bats and e2e-attacks.bats through policy.wasm (or POLICY=...) with kwctl (or the project's host)
	@hack/ensure-debian-packages.sh bats:bats jq:jq
	KWCTL=$(KWCTL) POLICY=$(abspath $(POLICY)) bats e2e.bats e2e-attacks.bats
	POLICY=$(abspath $(POLICY)) go test -count=1 ./test/corpus ./test/footprint

# The corpus (test/corpus) is every guest call the e2e suites, the tour and the malformed-input tests make, with the answers of the
# module that recorded it. Re-record it only for a change of behaviour, and review what changed.
.PHONY: corpus
corpus: policy.wasm $(KWHOST) ## re-record test/corpus/calls.jsonl.gz from the e2e suites, the tour and the malformed inputs (a change of behaviour only)
	@hack/ensure-debian-packages.sh bats:bats jq:jq
	rm -f $(BUILD)/calls.jsonl
	KWHOST_RECORD_CALLS=$(abspath $(BUILD))/calls.jsonl KWCTL=$(KWHOST) POLICY=$(abspath policy.wasm) bats e2e.bats e2e-attacks.bats
	KWHOST_RECORD_CALLS=$(abspath $(BUILD))/calls.jsonl $(KWHOST) tour policy.wasm testdata/tour.json >/dev/null
	KWHOST_RECORD_CALLS=$(abspath $(BUILD))/calls.jsonl go test -count=1 ./test/malformed
	POLICY=$(abspath policy.wasm) go test -count=1 -v -run TestCorpus ./test/corpus -args -pack $(abspath $(BUILD))/calls.jsonl

# The floors (bench/floor, bench/mutfloor) and the typed module go through every build step policy.wasm
# does, pre-initialiser included: a floor that skipped a step the policy takes would flatter every ratio
# the benchmark divides by it.
build/floor.tinygo.wasm build/mutfloor.tinygo.wasm build/typed.tinygo.wasm: build/%.tinygo.wasm: bench/%/main.go $(wildcard wapcguest/*.go) go.mod go.sum Makefile $(TOOLS)/tinygo.path
	@mkdir -p build
	$$(cat $(TOOLS)/tinygo.path) build -o $@ $(TINYGO_FLAGS) ./bench/$*

build/mutfloor.tinygo.wasm: bench/mutfloor/mutate.go

build/floor.wasm build/mutfloor.wasm build/typed.wasm: build/%.wasm: build/%.tinygo.wasm $(PREINIT)
	$(PREINIT) -o $@ $<

# YuniKorn's own admission handler (yunikorn-k8shim v1.4.0), built natively for the benchmarks to measure
# on the same requests in the same run: bench/yunikorn is a module of its own, as k8shim brings Kubernetes'.
YUNIKORN_NATIVE := $(BUILD)/yunikorn-native

$(YUNIKORN_NATIVE): bench/yunikorn/main.go bench/yunikorn/go.mod bench/yunikorn/go.sum
	cd bench/yunikorn && go build -o $@ .

.PHONY: bench
bench: policy.wasm build/floor.wasm build/mutfloor.wasm build/typed.wasm $(YUNIKORN_NATIVE) ## benchmark policy.wasm (fresh instance per evaluation) against the floors and YuniKorn's own handler, and the Go benchmarks of policy/ and policy/internal/rawjson natively
	go run ./bench/wazero -policy policy.wasm -floor build/floor.wasm -mutfloor build/mutfloor.wasm -typed build/typed.wasm -native $(YUNIKORN_NATIVE) -n $(BENCH_N)
	go test -run '^$$' -bench . -benchmem ./policy/...

BENCH_N ?= 2000

.PHONY: bench-wasmtime
bench-wasmtime: policy.wasm build/floor.wasm build/mutfloor.wasm build/typed.wasm $(YUNIKORN_NATIVE) ## the same benchmark on wasmtime, policy-server's engine (bench/wasmtime: a ~200 MB cgo module, not part of make test)
	cd bench/wasmtime && go build -o $(BUILD)/wasmtime-bench .
	$(BUILD)/wasmtime-bench -policy policy.wasm -floor build/floor.wasm -mutfloor build/mutfloor.wasm -typed build/typed.wasm -native $(YUNIKORN_NATIVE) -n $(BENCH_N)

# What users pay: Kubewarden's real policy-server with the policy, beside the same server with the do-nothing
# module and with the mutating floor, in alternating rounds, one client and eight (bench/policyserver; the
# modules are annotated with kwctl). Needs POLICY_SERVER and KWCTL built from Kubewarden's sources
# (hack/build-kubewarden.sh SRC); POLICY_SERVER_FLAGS adds flags (--sigstore-trust-config FILE offline).
.PHONY: bench-policy-server
bench-policy-server: policy.wasm build/floor.wasm build/mutfloor.wasm ## the policy through Kubewarden's real policy-server (POLICY_SERVER=, KWCTL=): latency beside the floors, start-up, RSS, and docs/policy-server-latency.svg
	@test -x "$(POLICY_SERVER)" || { echo "set POLICY_SERVER to Kubewarden's policy-server binary (hack/build-kubewarden.sh builds it)" >&2; exit 2; }
	go run ./bench/policyserver -policy-server $(POLICY_SERVER) -kwctl $(KWCTL) -flags '$(POLICY_SERVER_FLAGS)' -svg docs/policy-server-latency.svg

# The Go benchmarks of policy/ and policy/internal/rawjson built by TinyGo and run in the guest on wazero:
# what each piece costs where the policy runs (make bench times whole evaluations; natively they are 3-4x
# faster and allocate differently). The test binaries' data needs more initial memory than the policy's
# (wasm-ld refuses 384 KiB).
.PHONY: bench-guest
bench-guest: $(TOOLS)/tinygo.path ## the Go benchmarks of policy/ and policy/internal/rawjson inside the wasm guest (TinyGo, wazero); BENCH=regexp selects
	TINYGO_FLAGS='$(subst --initial-memory=393216,--initial-memory=1048576,$(filter-out -scheduler=none,$(TINYGO_FLAGS)))' hack/bench-guest.sh $$(cat $(TOOLS)/tinygo.path) '$(BENCH)' $(BENCHTIME)

BENCH ?= .
BENCHTIME ?= 1s

# One instance kept for many evaluations, as older policy-server releases and `kwctl bench` run a policy:
# the guest's memory after every 1,000 of KEPT_N mixed evaluations of 4 KB to 1 MB requests, the slowest
# call, and every answer checked against a fresh instance's (bench/keptinstance; not part of make test).
.PHONY: bench-kept
bench-kept: policy.wasm ## one instance kept for KEPT_N (10000) mixed evaluations up to 1 MB: memory every 1,000, the slowest call
	go run ./bench/keptinstance -policy policy.wasm -n $(KEPT_N)

KEPT_N ?= 10000

.PHONY: annotated-policy.wasm
annotated-policy.wasm: policy.wasm ## annotate policy.wasm with metadata.yml for release (needs kwctl)
	@case "$(KWCTL)" in *kwhost) echo "kwctl is not installed: get it from https://github.com/kubewarden/adm-controller/releases (or build it: hack/build-kubewarden.sh), put it on PATH or pass KWCTL=, then run: kwctl annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm" >&2; exit 1;; esac
	$(KWCTL) annotate -m metadata.yml -u README.md -o $@ policy.wasm

FUZZ_TARGETS := FuzzValidate FuzzFixedPoint FuzzSettings FuzzCheckSuppliedValue FuzzStamp FuzzEditWriteOver FuzzValidJSON FuzzJSONIndex FuzzPath FuzzCustomKind FuzzCustomKindUpdate FuzzLeaves FuzzTaskGroups FuzzRule14b
FUZZTIME ?= 60s

.PHONY: fuzz
fuzz: ## fuzz every target for FUZZTIME each (default 60s); crashers land in <package>/testdata/fuzz
	hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: fuzz-short
fuzz-short: ## the short fuzz budget CI runs on every submission
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(or $(FUZZTIME_SHORT),10s)

DEADCODE_VERSION := v0.52.0
DEADCODE := $(TOOLS)/deadcode/$(DEADCODE_VERSION)/deadcode

$(DEADCODE):
	GOBIN=$(dir $@) go install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)

$(GOLANGCI_LINT):
	GOBIN=$(TOOLS)/bin go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(ACTIONLINT):
	GOBIN=$(dir $@) go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

# npm comes from Debian when missing; hack/install-renovate.sh checks that Node.js is recent enough.
$(RENOVATE_CONFIG_VALIDATOR):
	@hack/ensure-debian-packages.sh npm:npm
	hack/install-renovate.sh $(RENOVATE_VERSION) $(TOOLS)/renovate/$(RENOVATE_VERSION)

.PHONY: lint
lint: lint-go lint-workflows lint-shell lint-renovate ## gofmt, go vet, golangci-lint, actionlint, shellcheck, the Renovate config

.PHONY: lint-go
lint-go: $(GOLANGCI_LINT) $(DEADCODE) ## gofmt, go vet, golangci-lint and deadcode (no function unreachable from main and the tests); no compiled program tracked
	@hack/check-no-binaries.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "run 'make fmt'" >&2; exit 1; }
	go vet ./...
	$(GOLANGCI_LINT) run ./...
	@out="$$($(DEADCODE) -test ./...)"; test -z "$$out" || { echo "$$out"; echo "deadcode: delete what nothing reaches" >&2; exit 1; }

.PHONY: lint-workflows
lint-workflows: $(ACTIONLINT) ## actionlint on .github/workflows (and shellcheck on their run: scripts)
	@hack/ensure-debian-packages.sh shellcheck:shellcheck
	ACTIONLINT=$(ACTIONLINT) hack/lint-workflows.sh

.PHONY: lint-shell
lint-shell: ## shellcheck on every shell script of the repository
	@hack/ensure-debian-packages.sh shellcheck:shellcheck
	hack/lint-shell.sh

.PHONY: lint-renovate
lint-renovate: $(RENOVATE_CONFIG_VALIDATOR) ## validate renovate.json with renovate-config-validator
	RENOVATE_CONFIG_VALIDATOR=$(RENOVATE_CONFIG_VALIDATOR) hack/lint-renovate.sh renovate.json

.PHONY: fmt
fmt: ## format the Go code
	gofmt -w $$(git ls-files '*.go')

.PHONY: clean
clean: ## remove build outputs (keeps the toolchain in .tools/)
	rm -rf policy.wasm annotated-policy.wasm $(BUILD)

# The real control-plane suite (kube-apiserver + kube-controller-manager built from the Go module proxy).
-include test/cluster/cluster.mk
# The release rehearsal (a local OCI registry, cosign and syft built from the Go module proxy).
-include test/release/release.mk

.PHONY: distclean
distclean: clean ## also remove the local toolchain
	chmod -R u+w $(TOOLS) 2>/dev/null || true
	rm -rf $(TOOLS)
