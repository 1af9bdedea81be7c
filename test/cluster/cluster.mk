# The cluster suite: the policy, served by `kwhost serve`, against a real kube-apiserver and
# kube-controller-manager built from the Go module proxy. Included by the main Makefile.
# See test/cluster/README.md.

KUBE_VERSION  ?= 1.37.2
# Keyed by version, so that a second run skips the ~8 minute build; `make clean` keeps it.
KUBE_BIN      ?= $(TOOLS)/k8s/v$(KUBE_VERSION)/bin
WEBHOOKCONFIG := $(BUILD)/webhookconfig
CLUSTER_RUN   ?= $(BUILD)/cluster
# The webhook rules come from here; another file lets a rule change be tried before it ships.
CLUSTER_METADATA ?= $(CURDIR)/metadata.yml
# The webhook's matchConditions come from this ClusterAdmissionPolicy (the shipped example).
CLUSTER_MATCH_CONDITIONS ?= $(CURDIR)/examples/default.yaml

$(WEBHOOKCONFIG): go.mod go.sum test/cluster/webhookconfig/main.go
	go build -o $@ ./test/cluster/webhookconfig

# The namespace-annotation copier: a mutating webhook of the suite's own that runs after the policy (guard.bats).
NSCOPIER := $(BUILD)/nscopier
$(NSCOPIER): go.mod test/cluster/nscopier/main.go
	go build -o $@ ./test/cluster/nscopier

.PHONY: kube-binaries
kube-binaries: ## build kube-apiserver + kube-controller-manager into .tools/k8s (~8 min, once per version)
	@test/cluster/build-k8s.sh $(KUBE_BIN)

.PHONY: e2e-cluster
e2e-cluster: policy.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) $(NSCOPIER) ## the policy against a real API server and controllers, and the guard after other mutators (test/cluster)
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(CLUSTER_RUN) KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) NSCOPIER=$(NSCOPIER) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  MATCH_CONDITIONS=$(CLUSTER_MATCH_CONDITIONS) \
	  test/cluster/run.sh

.PHONY: e2e-cluster-down
e2e-cluster-down: ## stop what a KEEP=1 (or interrupted) e2e-cluster run left running
	@RUN=$(CLUSTER_RUN) bash -c 'source test/cluster/lib.bash && stop_all'

# The subresource survey on another Kubernetes version (1.33 adds pods/resize). Not part of `make test`: a
# second version costs a build of its own (~8 min of both cores, cached afterwards).
.PHONY: e2e-cluster-survey
e2e-cluster-survey: ## the subresource survey and the Binding scenario on KUBE_VERSION (make e2e-cluster-survey KUBE_VERSION=1.33.0)
	@$(MAKE) --no-print-directory e2e-cluster BATS_FILTER='^(survey|a Binding rewrites)'

LOADGEN := $(BUILD)/loadgen
$(LOADGEN): go.mod go.sum test/cluster/loadgen/main.go
	go build -o $@ ./test/cluster/loadgen

# The controllers' client rate limit (20 requests/s per controller by default) is raised for the load
# run, so that it measures the API server and the webhook rather than the controllers' throttling.
E2E_LOAD_KCM_ARGS ?= --kube-api-qps=200 --kube-api-burst=400
E2E_LOAD_SUITE ?= load.bats faults.bats adoption.bats

.PHONY: e2e-load
e2e-load: policy.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) $(LOADGEN) ## load, faults and adoption on a real control plane (figures: build/cluster-load/load-results.txt)
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(BUILD)/cluster-load KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  LOADGEN=$(LOADGEN) KCM_EXTRA_ARGS="$(E2E_LOAD_KCM_ARGS)" SUITE="$(E2E_LOAD_SUITE)" \
	  test/cluster/run.sh

# The operator scenarios (test/cluster/operators.bats): the operators' own CRDs and controllers, built from
# their published artifacts at pinned versions into a directory per operator and version (build-operators.sh).
OPERATORS_DIR ?= $(TOOLS)/operators
OPERATORS_RUN ?= $(BUILD)/cluster-operators
OPERATOR_KEYS ?= spark-operator-v2.4.0 flink-operator-1.10.0 kuberay-v1.4.0 kuberay-v1.5.0 argo-v3.7.9 argo-v4.0.7 training-operator-v1.9.3

.PHONY: operators
operators: ## fetch the operators' CRDs and build their controllers into .tools/operators (cold ~2 min each, cached)
	@test/cluster/build-operators.sh $(OPERATORS_DIR) $(OPERATOR_KEYS)

# After a change of the operator scenarios: the last run's table into docs/operators.md (operators.bats checks it).
.PHONY: operators-table
operators-table: ## put the table of the last e2e-operators run into docs/operators.md
	@test/cluster/operators-table.sh update $(OPERATORS_RUN)/operators.tsv docs/operators.md

.PHONY: e2e-operators
e2e-operators: policy.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) ## real operators (KubeRay, Argo, Kubeflow training) create pods from custom resources, the policy in the loop; prints a table
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(OPERATORS_RUN) KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  MATCH_CONDITIONS=$(CLUSTER_MATCH_CONDITIONS) OPERATORS_DIR=$(OPERATORS_DIR) OPERATOR_KEYS="$(OPERATOR_KEYS)" \
	  test/cluster/run-operators.sh

# Apache YuniKorn's real scheduler against the same control plane, with the policy in the loop (issue 30): each
# version is built once from the Go module proxy into .tools/yunikorn/vVERSION (test/cluster/yunikorn/k8shim-*
# hold the modules) and runs in a private network namespace (its REST API listens on every interface).
YUNIKORN_VERSIONS ?= 1.4.0 1.8.0

.PHONY: yunikorn-binaries
yunikorn-binaries: ## build YuniKorn's scheduler and admission controller for each of YUNIKORN_VERSIONS into .tools/yunikorn (once per version)
	@for v in $(YUNIKORN_VERSIONS); do test/cluster/build-yunikorn.sh $$v $(TOOLS)/yunikorn/v$$v; done

.PHONY: e2e-yunikorn
e2e-yunikorn: policy.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) ## YuniKorn's scheduler (v1.4.0, v1.8.0) with the policy in the loop: the scenarios of issue 30 and a table (test/cluster/yunikorn.sh)
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(BUILD)/cluster-yunikorn KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  MATCH_CONDITIONS=$(CLUSTER_MATCH_CONDITIONS) YUNIKORN_VERSIONS="$(YUNIKORN_VERSIONS)" \
	  test/cluster/yunikorn.sh

# The head-to-head (not part of make test): the policy's webhook (kwhost serve) and YuniKorn's own admission
# controller under the same load, alternating rounds, per YuniKorn version one after the other: the API server's
# admission latency by webhook and CPU per admission (test/cluster/yunikorn-bench.bats). Figures in
# build/bench-yunikorn/bench-results.txt and the table at the end.
BENCH_ROUNDS ?= 4
BENCH_PODS ?= 300
.PHONY: bench-yunikorn
bench-yunikorn: policy.wasm build/floor.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) $(LOADGEN) ## head-to-head admission latency and CPU: the policy's webhook vs YuniKorn's admission controller (v1.4.0, v1.8.0; BENCH_ROUNDS x BENCH_PODS pods each)
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(BUILD)/bench-yunikorn KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  MATCH_CONDITIONS=$(CLUSTER_MATCH_CONDITIONS) YUNIKORN_VERSIONS="$(YUNIKORN_VERSIONS)" LOADGEN=$(LOADGEN) FLOOR=$(CURDIR)/build/floor.wasm \
	  YUNIKORN_SUITE=yunikorn-bench.bats YUNIKORN_SERIAL=1 BENCH_ROUNDS=$(BENCH_ROUNDS) BENCH_PODS=$(BENCH_PODS) \
	  test/cluster/yunikorn.sh

# Kubewarden's own controller in the loop (issue 42): adm-controller built once from the Go module proxy into
# .tools/kubewarden/vVERSION (test/cluster/kubewarden/adm-controller-VERSION holds the module), with the CRDs and
# chart templates of the same version; it reconciles every example, then the README's Quick start and the cluster
# scenarios go through the webhook configuration it wrote (test/cluster/kubewarden.sh, kubewarden.bats).
KW_VERSION ?= 1.36.0
SVCPROXY := $(BUILD)/svcproxy
$(SVCPROXY): go.mod test/cluster/svcproxy/main.go
	go build -o $@ ./test/cluster/svcproxy

.PHONY: kubewarden-binaries
kubewarden-binaries: ## build Kubewarden's controller v$(KW_VERSION) into .tools/kubewarden (once per version)
	@test/cluster/build-kubewarden.sh $(KW_VERSION) $(TOOLS)/kubewarden/v$(KW_VERSION)

.PHONY: e2e-kubewarden
e2e-kubewarden: policy.wasm $(KWHOST) $(PREFLIGHT) $(WEBHOOKCONFIG) $(SVCPROXY) ## Kubewarden's controller (v1.36.0) reconciles every example; the Quick start and the cluster scenarios through the webhook it wrote
	@KUBE_VERSION=$(KUBE_VERSION) KUBE_BIN=$(KUBE_BIN) RUN=$(BUILD)/cluster-kubewarden KWHOST=$(KWHOST) PREFLIGHT=$(PREFLIGHT) \
	  POLICY=$(CURDIR)/policy.wasm WEBHOOKCONFIG=$(WEBHOOKCONFIG) METADATA=$(CLUSTER_METADATA) \
	  MATCH_CONDITIONS=$(CLUSTER_MATCH_CONDITIONS) KW_VERSION=$(KW_VERSION) KW_BIN=$(TOOLS)/kubewarden/v$(KW_VERSION) SVCPROXY=$(SVCPROXY) \
	  test/cluster/kubewarden.sh
