# Apiary — developer entry points. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Tool and control-plane versions. The envtest binaries are built from the Go
# module proxy (see hack/testenv) and cached under bin/, keyed by version.
CONTROLLER_GEN_VERSION ?= v0.23.0
FLUX_VERSION ?= v1.9.6
KUBE_VERSION ?= 1.35.4
ETCD_VERSION ?= 3.6.16
ENVTEST_DIR ?= $(CURDIR)/bin/k8s/$(KUBE_VERSION)-etcd$(ETCD_VERSION)
export KUBEBUILDER_ASSETS ?= $(ENVTEST_DIR)
FLUX_DIR ?= $(CURDIR)/bin/flux/$(FLUX_VERSION)
export APIARY_FLUX_BIN ?= $(FLUX_DIR)

CONTROLLER_GEN := GOTOOLCHAIN=local go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
GO_TEST_ARGS ?=
GO_TEST_TIMEOUT ?= 25m

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs (config/crd/bases, charts/apiary/crds), test CRDs for k0rdent and RBAC.
	$(CONTROLLER_GEN) crd paths=./api/common/... paths=./api/infra/... paths=./api/workspaces/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/k0rdent/... output:crd:artifacts:config=test/crds/k0rdent
	$(CONTROLLER_GEN) rbac:roleName=apiary-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	mkdir -p charts/apiary/crds
	rm -f charts/apiary/crds/*.yaml
	cp config/crd/bases/*.yaml charts/apiary/crds/
	mkdir -p charts/apiary/files && cp config/rbac/role.yaml charts/apiary/files/role.yaml
	go run ./hack/apidocs > docs/api.md

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/testenv/')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: tidy
tidy: ## Tidy go.mod.
	go mod tidy

.PHONY: verify
verify: generate manifests fmt ## Fail when generated or formatted files are stale.
	@if [ -n "$$(git status --porcelain -- . ':!bin')" ]; then \
		echo "Generated files are stale or the tree is unformatted; run 'make generate manifests fmt' and commit:"; \
		git status --porcelain -- . ':!bin'; git --no-pager diff --stat; exit 1; fi

##@ Testing

.PHONY: testenv
testenv: $(ENVTEST_DIR)/kube-apiserver ## Build kube-apiserver and etcd for envtest (cached in bin/).

$(ENVTEST_DIR)/kube-apiserver: hack/testenv/build.sh hack/testenv/kube-apiserver/go.mod hack/testenv/etcd/go.mod
	hack/testenv/build.sh $(ENVTEST_DIR)

.PHONY: flux-crds
flux-crds: ## Download Flux's controller modules (for their CRDs) into the Go module cache.
	cd "$$(mktemp -d)" && GOFLAGS=-mod=mod go mod download github.com/fluxcd/source-controller@$(FLUX_VERSION) github.com/fluxcd/kustomize-controller@$(FLUX_VERSION)

.PHONY: flux-controllers
flux-controllers: $(FLUX_DIR)/source-controller $(FLUX_DIR)/kustomize-controller ## Build Flux's source- and kustomize-controller for tests (cached in bin/).

# build.sh builds whichever of the two is missing.
$(FLUX_DIR)/source-controller $(FLUX_DIR)/kustomize-controller: hack/flux/build.sh hack/flux/source-controller/go.mod hack/flux/kustomize-controller/go.mod
	hack/flux/build.sh $(FLUX_DIR)

.PHONY: test
test: generate manifests vet testenv flux-crds flux-controllers ## Run all tests against a real API server (envtest).
	go test ./... -timeout $(GO_TEST_TIMEOUT) -coverprofile cover.out $(GO_TEST_ARGS)

##@ Build and run

.PHONY: build
build: ## Build the apiary binary into bin/.
	go build -o bin/apiary .

.PHONY: run
run: testenv build $(if $(findstring git,$(RUN_ARGS)),flux-crds flux-controllers) ## Run Apiary against an embedded local control plane (RUN_ARGS=--mode=git for Git delivery with Flux).
	bin/apiary sandbox --assets $(ENVTEST_DIR) --flux-bin $(FLUX_DIR) $(RUN_ARGS)

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
