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
# promtool, for the rule tests of test/monitoring; its version is pinned in hack/promtool/go.mod.
PROMTOOL_VERSION := $(shell awk -v m=github.com/prometheus/prometheus '($$1=="require" && $$2==m) || $$1==m {print ($$1=="require" ? $$3 : $$2); exit}' hack/promtool/go.mod)
PROMTOOL_DIR ?= $(CURDIR)/bin/promtool/$(PROMTOOL_VERSION)
PROMTOOL := $(PROMTOOL_DIR)/promtool
export APIARY_PROMTOOL ?= $(PROMTOOL)

CONTROLLER_GEN := GOTOOLCHAIN=local go run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
GO_TEST_ARGS ?=
GO_TEST_TIMEOUT ?= 25m

# The version has one source: the chart's appVersion. The image is tagged
# with it, the binary stamped with it, and the chart pulls that tag.
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' charts/apiary/Chart.yaml)
IMAGE_REPO ?= ghcr.io/apiaryhq/apiary
IMAGE_TAG ?= $(VERSION)
IMAGE ?= $(IMAGE_REPO):$(IMAGE_TAG)
PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_DIR ?= $(CURDIR)/bin/image
IMAGE_SOURCE ?= https://github.com/apiaryhq/apiary
IMAGE_LICENSES ?= Apache-2.0
# The commit, -dirty when tracked files have changes, and its time: the build
# date, so that rebuilding a commit gives the same binary and image digest.
COMMIT ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) || c=unknown; \
	[ "$$c" = unknown ] || [ -z "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || c=$$c-dirty; echo $$c)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE = $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r $(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := github.com/apiaryhq/apiary/internal/version
# The flags of every release binary, also used by the Dockerfile (make binary).
GO_BUILD_FLAGS := -trimpath -buildvcs=false
GO_LDFLAGS = -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(BUILD_DATE)
# go-build-static OS ARCH OUT: the static, stripped, stamped manager.
go-build-static = CGO_ENABLED=0 GOOS=$(1) GOARCH=$(2) go build $(GO_BUILD_FLAGS) -ldflags '$(GO_LDFLAGS)' -o $(3) .
HOST_ARCH = $(shell go env GOARCH)
TOOLS_DIR := $(CURDIR)/bin/tools
IMAGE_BUILDER := $(TOOLS_DIR)/apiary-image
CYCLONEDX := $(TOOLS_DIR)/cyclonedx-gomod
CRANE := $(TOOLS_DIR)/crane
# The host-architecture image that make test builds and test/image opens.
export APIARY_IMAGE_DIR ?= $(CURDIR)/bin/image-host

.PHONY: all
all: build

##@ Development

.PHONY: generate
generate: ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs (config/crd/bases, charts/apiary/crds), test CRDs for k0rdent and RBAC.
	$(CONTROLLER_GEN) crd paths=./api/common/... paths=./api/infra/... paths=./api/workspaces/... paths=./api/quota/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./api/k0rdent/... output:crd:artifacts:config=test/crds/k0rdent
	$(CONTROLLER_GEN) rbac:roleName=apiary-manager paths=./internal/controller/... paths=./internal/manager/... output:rbac:artifacts:config=config/rbac
	mkdir -p charts/apiary/crds
	rm -f charts/apiary/crds/*.yaml
	cp config/crd/bases/*.yaml charts/apiary/crds/
	mkdir -p charts/apiary/files && cp config/rbac/role.yaml charts/apiary/files/role.yaml
	go run ./hack/apidocs > docs/api.md
	$(MAKE) --no-print-directory conditions-docs
	$(MAKE) --no-print-directory chart-readme

.PHONY: chart-readme
chart-readme: ## Generate the values table of charts/apiary/README.md (helm show readme) from values.yaml.
	go run ./hack/chartreadme

.PHONY: conditions-docs
conditions-docs: ## Generate docs/conditions.md (conditions, reasons, phases and events) from the Go source.
	go run ./hack/conditionsdocs > docs/conditions.md

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $$(git ls-files -co --exclude-standard '*.go' | grep -v '^hack/testenv/')

.PHONY: vet
vet: ## Run go vet (the manager's module, the image builder's and test/monitoring's).
	go vet ./...
	go vet -tags sandbox .
	go -C hack/image vet ./...
	go -C test/monitoring vet ./...

.PHONY: tidy
tidy: ## Tidy go.mod (and test/monitoring's).
	go mod tidy
	go -C test/monitoring mod tidy

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

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool for the rule tests (cached in bin/).

$(PROMTOOL): hack/promtool/build.sh hack/promtool/go.mod
	hack/promtool/build.sh $(PROMTOOL_DIR)

.PHONY: test
test: generate manifests vet testenv flux-crds flux-controllers image-host promtool ## Run all tests against a real API server (envtest), then test/monitoring.
	go test ./... -timeout $(GO_TEST_TIMEOUT) -coverprofile cover.out $(GO_TEST_ARGS)
	go -C test/monitoring test ./... -timeout $(GO_TEST_TIMEOUT) $(GO_TEST_ARGS)

##@ Build and run

.PHONY: build
build: ## Build the apiary binary into bin/ (version-stamped, with the sandbox, for make run).
	go build -tags sandbox -ldflags '$(subst -s -w ,,$(GO_LDFLAGS))' -o bin/apiary .

.PHONY: run
run: testenv build $(if $(findstring git,$(RUN_ARGS)),flux-crds flux-controllers) ## Run Apiary against an embedded local control plane (RUN_ARGS=--mode=git for Git delivery with Flux).
	bin/apiary sandbox --assets $(ENVTEST_DIR) --flux-bin $(FLUX_DIR) $(RUN_ARGS)

##@ Image and release

.PHONY: binary
binary: ## Build the static, stripped, stamped manager: BINARY_OS/BINARY_ARCH (linux/host) into BINARY_OUT.
	$(call go-build-static,$(or $(BINARY_OS),linux),$(or $(BINARY_ARCH),$(HOST_ARCH)),$(or $(BINARY_OUT),bin/apiary-static))

# The SBOM tool reads each linked module's licence from the module cache, which
# the build just filled and checked against go.sum; it asks for them from a
# folder outside the module, where the go command would otherwise want the
# checksum database for each (a fresh machine has none of it cached), hence
# GOPROXY=off GOSUMDB=off on that call.
.PHONY: image
image: $(IMAGE_BUILDER) $(CYCLONEDX) ## Build the multi-arch OCI image without Docker: layout, tarball and SBOMs in bin/image (PLATFORMS=...).
	@rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)/sbom
	@set -- ; for p in $(subst $(comma), ,$(PLATFORMS)); do os=$${p%/*}; arch=$${p#*/}; bin=$(IMAGE_DIR)/apiary-$$os-$$arch; \
	  sbom=$(IMAGE_DIR)/sbom/apiary-$(IMAGE_TAG)-$$os-$$arch.cdx.json; \
	  echo ">> $$p: building $$bin ($(VERSION), $(COMMIT))"; $(call go-build-static,$$os,$$arch,$$bin); \
	  echo ">> $$p: SBOM $$sbom"; GOOS=$$os GOARCH=$$arch GOPROXY=off GOSUMDB=off $(CYCLONEDX) bin -json -licenses -std -noserial -notimestamp \
	    -version $(VERSION) -output $$sbom $$bin 2>$(IMAGE_DIR)/sbom-$$os-$$arch.log || { cat $(IMAGE_DIR)/sbom-$$os-$$arch.log; exit 1; }; \
	  set -- "$$@" -binary $$p=$$bin; done; \
	echo ">> assembling $(IMAGE) for $(PLATFORMS)"; \
	$(IMAGE_BUILDER) -layout $(IMAGE_DIR)/oci -tarball $(IMAGE_DIR)/apiary-$(IMAGE_TAG).oci.tar \
	  -repository $(IMAGE_REPO) -tag $(IMAGE_TAG) -source-date-epoch $(SOURCE_DATE_EPOCH) -version $(VERSION) \
	  -revision $(COMMIT) -source $(IMAGE_SOURCE) -licenses $(IMAGE_LICENSES) "$$@"

.PHONY: binary-size
binary-size: ## Print how much of the manager's code each module is (from an unstripped static build in bin/).
	CGO_ENABLED=0 go build $(GO_BUILD_FLAGS) -o bin/apiary-unstripped .
	go -C hack/image run ./binsize $(CURDIR)/bin/apiary-unstripped 25

.PHONY: image-host
image-host: ## The image for the host's architecture only, into bin/image-host (what make test opens).
	$(MAKE) --no-print-directory image PLATFORMS=linux/$(HOST_ARCH) IMAGE_DIR=$(APIARY_IMAGE_DIR)

$(IMAGE_BUILDER): hack/image/go.mod hack/image/go.sum $(wildcard hack/image/*.go)
	go -C hack/image build -o $@ .

$(CYCLONEDX): hack/image/go.mod hack/image/go.sum
	go -C hack/image build -o $@ github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

$(CRANE): hack/image/go.mod hack/image/go.sum
	go -C hack/image build -o $@ github.com/google/go-containerregistry/cmd/crane

.PHONY: crane
crane: $(CRANE) ## Build crane (go-containerregistry, pinned in hack/image) into bin/tools, to push the image.

# print-VAR prints a variable, e.g. make -s print-IMAGE.
print-%:
	@echo '$($*)'

comma := ,

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-12s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
