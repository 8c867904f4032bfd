# supervisor — two commands: `make run` serves the default model, `make test`
# runs every test. Both set up what they need (ONNX Runtime, models, binary).

GO        ?= go
BIN       := bin/supervisor
ORT_DIR   := third_party/onnxruntime
ORT_LIB   := $(ORT_DIR)/libonnxruntime.so.1
# ORT_BUILD: auto (the GPU build when NVML sees a GPU, else the CPU build), cpu or gpu;
# see scripts/fetch-ort (ONNX Runtime 1.29.0 from npm, sha512 pinned; ORT_TARBALLS=dir offline).
ORT_BUILD ?= auto
MODELS    := models/default.onnx
CONFIG    ?= configs/default.yaml
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/supervisor-dev/supervisor/supervisor.Version=$(VERSION)
# -p 1: one package at a time, so the end-to-end tests (real processes,
# timing-sensitive recovery) do not compete with other packages for CPUs.
GOTESTFLAGS ?= -race -p 1 -timeout 30m

export ORT_LIBRARY := $(CURDIR)/$(ORT_LIB)
# kubeconform validates deploy/k8s against Kubernetes' schemas
# (deploy/k8s/kubeconform_test.go), installed from the Go module proxy.
KUBECONFORM_VERSION := v0.8.0
export KUBECONFORM := $(CURDIR)/out/tools/kubeconform

PREFIX    ?= /usr/local
DESTDIR   ?=

.PHONY: all setup setup-system build models run test ops bench lint fmt clean install deb deb-check image image-check test-systemd fuzz conformance hostile proto fleet gpu-bundle

all: build

## setup: Debian build packages (libturbojpeg), ONNX Runtime (the GPU build when NVML
## sees a GPU: ORT_BUILD=auto|cpu|gpu), Go modules, models
setup: setup-system $(ORT_LIB) $(MODELS)
	scripts/fetch-ort $(ORT_BUILD) $(ORT_DIR)
	$(GO) mod download

setup-system:
	scripts/setup-system

$(ORT_LIB): scripts/fetch-ort
	scripts/fetch-ort $(ORT_BUILD) $(ORT_DIR)

$(MODELS): $(wildcard internal/onnxmodel/*.go cmd/genmodels/*.go)
	$(GO) run ./cmd/genmodels -o models

## build: the supervisor binary in bin/ (PIE, as the Debian package's:
## scripts/build-deb then reuses Go's build cache instead of compiling again)
build: setup-system
	$(GO) build -buildmode=pie -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/supervisor

## run: set up, build and serve the default model on 127.0.0.1:8000
run: setup build
	$(BIN) run -c $(CONFIG)

## test: set up, build and run every test (race detector on); installs
## chromium for the status page test when it can (else that test skips)
test: setup build $(KUBECONFORM)
	scripts/setup-test-tools
	SUPERVISOR_BIN=$(CURDIR)/$(BIN) $(GO) test $(GOTESTFLAGS) ./...
	@# A bounded fleet run (20-50 s): the full one adds maintenance.
	@if [ "$$(id -u)" = 0 ]; then STEADY=2s SCENARIOS="upgrade reload kill" scripts/fleet; \
	else echo "test: skipping scripts/fleet (network namespaces need root); run it as root"; fi

## ops: the operations matrix in full (TestOperationsMatrix with OPS=full, 30-60 s): reload,
## repository unload+load, recycle, worker kill, two upgrades, stop and start, each followed by
## HTTP and gRPC infer, a metrics scrape, supervisor status, a response cache hit and the poison
## quarantine, and a log check (scripts/log-errors); prints the table. `make test` runs a sample
ops: setup build
	SUPERVISOR_BIN=$(CURDIR)/$(BIN) OPS=full $(GO) test $(GOTESTFLAGS) -count=1 -v -run '^TestOperationsMatrix$$' ./cmd/supervisor/

$(KUBECONFORM):
	GOBIN=$(CURDIR)/out/tools $(GO) install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)

## conformance: every ONNX backend node test (Debian's libonnx-testdata) in one config:
## how many load and serve, why the rest do not, how many answer their test data correctly
conformance: setup
	scripts/conformance

## bench: Go benchmarks, the served-vs-raw load runs (default model, MLP), batching on and off,
## then the master against nginx least_conn on the same workers (rewrites BENCHMARKS.md); CSVs in out/bench/
bench: setup build
	scripts/need-deb jq wrk nginx
	$(GO) test -run '^$$' -bench . -benchtime 2s ./internal/ort/ ./internal/v2/ ./lb/ ./internal/batch/
	MODEL=default scripts/bench-serve
	MODEL=mlp scripts/bench-serve
	REPORT=BENCHMARKS.md scripts/bench-vs-nginx

## gpu-bundle: out/gpu-bundle/unpack and parts of at most 60 MiB: stripped binaries, the GPU
## build of ONNX Runtime (scripts/fetch-ort gpu: 180 MB download; ORT_TARBALLS=dir offline),
## configs, test data and the model generator, for a GPU host with no Go, network or apt
## (docs/gpu-hosts.md); there: sh unpack DEST && DEST/scripts/gpu-check
gpu-bundle: setup-system
	scripts/gpu-bundle out/gpu-bundle

## hostile: the hostile-client suite at full scale (scripts/hostile): every attack
## against a real supervisor while a well-behaved client measures errors and p99
hostile: setup build
	scripts/hostile

## deb: the Debian package out/deb/onnx-supervisor_<version>_amd64.deb and its
## -dbgsym package (scripts/build-deb): /usr/bin/supervisor (PIE, stripped),
## ONNX Runtime in /usr/lib/supervisor, onnx-supervisor.service,
## /etc/onnx-supervisor/supervisor.yaml (conffile), models in
## /usr/share/onnx-supervisor, supervisor(8); Depends from dpkg-shlibdeps.
## VERSION=<debian version> overrides the one derived from git.
deb: setup-system $(ORT_LIB) $(MODELS)
	$(if $(filter command line environment,$(origin VERSION)),VERSION=$(VERSION)) scripts/build-deb

## deb-check: build the package, run lintian on it (fails on any error or an
## unargued warning: scripts/lintian-check), check every path and name
## against Debian bookworm's archive (scripts/archive-names) and the
## migration from the old package name (scripts/migration-check, root);
## about 2 minutes after the build
deb-check: deb
	scripts/lintian-check out/deb
	scripts/archive-names out/deb
	scripts/migration-check out/deb

## image: the container image of deploy/k8s, out/image/onnx-supervisor_<version>.oci.tar
## (scripts/build-image: the package in a Debian 12 root by mmdebstrap, one gzip layer;
## root; about 2 minutes)
image: deb
	scripts/build-image

## image-check: build the image, then skopeo verifies the OCI archive and its root
## serves an inference in a chroot of its own network namespace (scripts/image-check)
image-check: image
	scripts/image-check $$(ls -t out/image/onnx-supervisor_*.oci.tar | sed -n 1p)

## test-systemd: the .deb under a real systemd: a Debian 12 root (debootstrap, cached in
## out/systemd-e2e/) booted with systemd-nspawn; install, reload, upgrade, watchdog, stop, kill
test-systemd: deb
	scripts/systemd-e2e

## fleet: three hosts in network namespaces behind HAProxy under load: rolling
## upgrade, maintenance (stop + start), reload, kill -9 of a master (root)
fleet: setup build
	scripts/fleet

## install: binary, ONNX Runtime, systemd unit (onnx-supervisor.service), default
## config (kept if present) and models under DESTDIR/PREFIX, /etc/onnx-supervisor
## and /var/lib/onnx-supervisor. The config drains as the package's does
## (drain_grace 5s, scripts/packaged-config). Prefer `make deb`: the package
## brings the runtime libraries the binary links; after install, the target
## host needs the Debian packages printed.
install: build $(ORT_LIB) $(MODELS)
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/supervisor
	install -D -m 0644 $(ORT_LIB) $(DESTDIR)$(PREFIX)/lib/supervisor/libonnxruntime.so.1
	# A GPU build's provider libraries: ONNX Runtime loads them from beside libonnxruntime.so.1.
	for p in $(wildcard $(ORT_DIR)/libonnxruntime_providers_*.so); do install -m 0644 $$p $(DESTDIR)$(PREFIX)/lib/supervisor/; done
	install -D -m 0644 systemd/onnx-supervisor.service $(DESTDIR)/etc/systemd/system/onnx-supervisor.service
	sed -i 's#/usr/local/bin/supervisor#$(PREFIX)/bin/supervisor#g' $(DESTDIR)/etc/systemd/system/onnx-supervisor.service
	test -e $(DESTDIR)/etc/onnx-supervisor/supervisor.yaml || { install -d $(DESTDIR)/etc/onnx-supervisor && \
	  sed 's/^drain_grace: 0s$$/drain_grace: 5s/' configs/default.yaml >$(DESTDIR)/etc/onnx-supervisor/supervisor.yaml; }
	install -d $(DESTDIR)/var/lib/onnx-supervisor/models
	install -m 0644 models/*.onnx $(DESTDIR)/var/lib/onnx-supervisor/models/
	@echo "install: the host that runs it needs these Debian packages (what the binary and ONNX Runtime link;"
	@echo "install: the package of make deb depends on them): $$(scripts/shlibs-depends $(BIN) $(ORT_LIB) 2>/dev/null || \
	  echo 'libc6, libdeflate0, libgcc-s1, libstdc++6, libturbojpeg0 (dpkg-shlibdeps, in dpkg-dev, lists them with versions)')"

## fuzz: every fuzz target for FUZZTIME (default 20s) each; crashers become seeds
fuzz: setup
	scripts/fuzz

## proto: regenerate internal/inferencepb (the gRPC API's Go code) from its .proto;
## installs Debian's protobuf-compiler when protoc is missing
proto:
	scripts/proto

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin models
