# The release rehearsal: the release workflow's push, sign, verify and pull, against a local OCI registry
# with a throwaway key and no transparency log, then the e2e suite on the module pulled back. Included by
# the main Makefile. docs/release.md says what it proves and what only a real tag push shows.

# Built from the Go module proxy, each into a directory keyed by its version (a second run only checks that
# it is there; `make clean` keeps them). cosign and syft are the versions the release installs
# (hack/install-release-tools.sh; test/shipcheck keeps them equal).
# (Not REGISTRY_*: distribution's registry reads every REGISTRY_<KEY> variable as configuration.)
DISTRIBUTION_VERSION := v3.0.0
COSIGN_VERSION := v3.1.3
SYFT_VERSION := v1.28.0
RELEASE_TOOLS := $(TOOLS)/release
REHEARSAL_RUN ?= $(BUILD)/release-rehearsal
OCIWASM := $(BUILD)/ociwasm

$(OCIWASM): go.mod go.sum test/release/ociwasm/main.go
	go build -o $@ ./test/release/ociwasm

.PHONY: release-tools
release-tools: ## build the rehearsal's registry (distribution), cosign and syft into .tools/release (~8 min once)
	@DISTRIBUTION_VERSION=$(DISTRIBUTION_VERSION) COSIGN_VERSION=$(COSIGN_VERSION) SYFT_VERSION=$(SYFT_VERSION) \
	  RELEASE_TOOLS=$(RELEASE_TOOLS) test/release/tools.sh

.PHONY: release-rehearsal
release-rehearsal: policy.wasm $(KWHOST) $(OCIWASM) ## push, sign, verify and pull policy.wasm on a local registry, then the e2e suite on what was pulled (test/release)
	@DISTRIBUTION_VERSION=$(DISTRIBUTION_VERSION) COSIGN_VERSION=$(COSIGN_VERSION) SYFT_VERSION=$(SYFT_VERSION) \
	  RELEASE_TOOLS=$(RELEASE_TOOLS) RUN=$(REHEARSAL_RUN) POLICY=$(CURDIR)/policy.wasm OCIWASM=$(OCIWASM) KWHOST=$(KWHOST) \
	  test/release/rehearsal.sh
