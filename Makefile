# amp-exporter. `make test` runs the whole test suite; it first runs
# scripts/test-deps.sh, which installs or fetches what the suite needs
# (prometheus/promtool and chromium from apt, ccusage from npm, a pinned
# helm built once), cached under .cache/.

GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION    ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_PKG := github.com/prometheus/common/version
LDFLAGS     := -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION) \
               -X $(VERSION_PKG).Branch=main -X $(VERSION_PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)
STATICCHECK ?= staticcheck
FUZZTIME    ?= 10s
# Fuzzing runs on Go 1.27: Go 1.26's fuzzing coordinator can fail a run that
# found nothing with "context deadline exceeded" when -fuzztime ends
# (go.dev/issue/75804, fixed in Go 1.27.0; seen here on a quiet machine).
# The go command fetches this toolchain from the module proxy once.
FUZZGO      ?= GOTOOLCHAIN=go1.27.3 $(GO)

.PHONY: build test unit e2e e2e-rw2 rules dashboards helm-check chart-sync lint fuzz bench ci
.PHONY: cross test-arm64 image image-test services-check release chart-image-test

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o amp-exporter ./cmd/amp-exporter

# The whole suite: unit tests with the race detector (parsers, collector,
# sources, config, binary), the alert rules under promtool, the dashboards'
# generator and checks, the Helm chart under a real helm, then the
# end-to-end tests against a real Prometheus.
test: test-deps unit rules dashboards helm-check e2e

# `make test` (and so CI) runs the tests that have a short and a long size
# at the long one: the kill loops with 40 and 24 kills instead of 12 and 8,
# the differential tests over 10x the inputs (internal/testsupport/testsize).
test: export AMP_TEST_LONG = 1

# What the suite needs, pinned and cached under .cache/ (see the script).
.PHONY: test-deps
test-deps:
	bash scripts/test-deps.sh

# The unit tests at their short size (AMP_TEST_LONG unset); `make test`
# runs them at the long size.
unit:
	$(GO) test -race -count=1 ./...

# Prometheus 3 (its OTLP receiver, remote-write 2.0), built from the module
# proxy once per version into .cache/prom3/<version> by scripts/test-deps.sh
# (about 8 minutes the first time on a loaded machine, then cached). The
# tests that need it read its path from PROMETHEUS3 and fail without it.
PROMETHEUS3_VERSION ?= v0.316.0
PROMETHEUS3 = $$(PROMETHEUS3_VERSION=$(PROMETHEUS3_VERSION) bash scripts/test-deps.sh prometheus3-path)

# Test artifacts (the landing page's screenshot) stay in .cache/e2e-artifacts.
e2e:
	rm -rf .cache/e2e-artifacts && mkdir -p .cache/e2e-artifacts
	prom3=$(PROMETHEUS3) && PROMETHEUS3=$$prom3 $(GO) test -tags e2e -race -count=1 -timeout 20m -artifacts -outputdir $(CURDIR)/.cache/e2e-artifacts ./e2e/

# The tests against Prometheus 3 alone (remote-write 2.0 and OTLP); make e2e
# runs them too.
e2e-rw2:
	prom3=$(PROMETHEUS3) && PROMETHEUS3=$$prom3 $(GO) test -tags e2e -count=1 -timeout 10m -run 'TestRemoteWrite2AgainstPrometheus3|TestOTLP' ./e2e/

rules:
	bash deploy/rules/check.sh

dashboards:
	$(GO) -C dashboards/gen vet ./...
	$(GO) -C dashboards/gen test -count=1 ./...

# Regenerate the dashboards after changing dashboards/gen.
dashboards-gen:
	$(GO) -C dashboards/gen run . -out ..

helm-check:
	bash .ci/helm-check

# Copy the rules and dashboards into the chart after changing them.
chart-sync:
	deploy/helm/sync.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./e2e/
	$(STATICCHECK) ./...
	$(GO) test -count=1 ./docs/
	cd dashboards/gen && $(GO) vet ./... && $(STATICCHECK) ./...
	cd deploy/helm/manifest-test && $(GO) vet ./... && $(STATICCHECK) ./...

# A short run of every fuzz target; the corpus lives in testdata/fuzz.
fuzz: GO := $(FUZZGO)
fuzz:
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzSkipBlocks -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzSkipEnd -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzSWARBlocks -fuzztime $(FUZZTIME)
	$(GO) test ./parser/thread -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./parser/thread -run '^$$' -fuzz FuzzParseTimestamp -fuzztime $(FUZZTIME)
	$(GO) test ./parser/linecount -run '^$$' -fuzz FuzzDiff -fuzztime $(FUZZTIME)
	$(GO) test ./parser/streamjson -run '^$$' -fuzz FuzzParseLine -fuzztime $(FUZZTIME)
	$(GO) test ./parser/sse -run '^$$' -fuzz FuzzParser -fuzztime $(FUZZTIME)
	$(GO) test ./parser/amyturn -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME)
	$(GO) test ./parser/gitremote -run '^$$' -fuzz FuzzNormalize -fuzztime $(FUZZTIME)
	$(GO) test ./parser/shellcmd -run '^$$' -fuzz FuzzRecognize -fuzztime $(FUZZTIME)
	$(GO) test ./otlp -run '^$$' -fuzz FuzzAnswer -fuzztime $(FUZZTIME)
	$(GO) test ./otlp -run '^$$' -fuzz FuzzPartialSuccess -fuzztime $(FUZZTIME)
	$(GO) test ./source/workspace -run '^$$' -fuzz FuzzLoadState -fuzztime $(FUZZTIME)
	$(GO) test ./source/workspace/api -run '^$$' -fuzz FuzzDecodeThreadPage -fuzztime $(FUZZTIME)
	$(GO) test ./source/workspace/api -run '^$$' -fuzz FuzzDecodeThreadUsage -fuzztime $(FUZZTIME)
	$(GO) test ./source/workspace/api -run '^$$' -fuzz FuzzDecodeDailyUsage -fuzztime $(FUZZTIME)
	# Each input is a file opened twice: bound the minimization of a new
	# input, which otherwise takes the whole run.
	$(GO) test ./state/statelog -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 100x

# Cross-platform: build and vet (unit and e2e code) for every platform
# users run (issue 14).
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

cross:
	@set -e; for p in $(PLATFORMS); do \
	  echo "--- cross $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build ./...; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet ./...; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet -tags e2e ./e2e/; \
	done

# The unit tests on linux/arm64 under Debian's qemu-user: static test
# binaries run by the emulator, so the portable JSON skip path and any
# arm64 code run for real (no -race there: it needs cgo).
test-arm64:
	@bash scripts/platform-deps.sh qemu-aarch64-static:qemu-user-static
	qemu=$$(command -v qemu-aarch64-static || command -v qemu-aarch64); \
	AMP_TEST_EXEC=$$qemu CGO_ENABLED=0 GOARCH=arm64 $(GO) test -count=1 -exec $$qemu ./...

# The container image without a container engine or a base-image pull
# (deploy/image): static linux binaries for IMAGE_PLATFORMS in one OCI
# layout and oci-archive under $(DIST), then checked back. image-test
# also runs it under podman (deploy/image/run-test.sh).
DIST            ?= dist
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_VERSION   ?= $(patsubst v%,%,$(VERSION))
IMAGE_TAR       := $(DIST)/amp-exporter-$(IMAGE_VERSION).oci.tar

image:
	@set -e; rm -rf $(DIST)/image; bins=; for p in $(IMAGE_PLATFORMS); do \
	  out=$(DIST)/image-bin/$${p%/*}-$${p#*/}/amp-exporter; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(subst Version=$(VERSION) ,Version=$(IMAGE_VERSION) ,$(LDFLAGS)) -s -w' -o $$out ./cmd/amp-exporter; \
	  bins="$$bins -binary $$p=$(CURDIR)/$$out"; \
	done; \
	$(GO) -C deploy/image run . $$bins -version $(IMAGE_VERSION) -revision $(REVISION) \
	  -out $(CURDIR)/$(DIST)/image -tar $(CURDIR)/$(IMAGE_TAR); \
	$(GO) -C deploy/image run . verify $(CURDIR)/$(DIST)/image; \
	echo "image: $(IMAGE_TAR)"

image-test: image
	@bash scripts/platform-deps.sh podman:podman runc:runc
	$(GO) -C deploy/image vet ./...
	$(GO) -C deploy/image test -count=1 ./...
	bash deploy/image/run-test.sh $(IMAGE_TAR) $(IMAGE_VERSION)

# The launchd agent and systemd user unit (deploy/launchd, deploy/systemd):
# systemd-analyze verify and plist checks (deploy/services-check.sh).
services-check: build
	@bash scripts/platform-deps.sh systemd-analyze:systemd plistutil:libplist-utils python3:python3
	bash deploy/services-check.sh amp-exporter

# Release archives for linux, darwin (amd64, arm64) and windows/amd64 with
# sha256sums.txt, version stamped (.goreleaser.yaml), checked by
# scripts/release-check.sh. A snapshot unless HEAD is a clean tag.
GORELEASER_VERSION ?= v2.17.0
GORELEASER         := $(CURDIR)/.cache/bin/goreleaser

$(GORELEASER):
	GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

release: $(GORELEASER)
	@$(GORELEASER) --version 2>/dev/null | grep -q 'GitVersion:.*$(GORELEASER_VERSION:v%=%)' || \
	  GOBIN=$(CURDIR)/.cache/bin $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
	@export AMP_VERSION=$(VERSION) AMP_REVISION=$(REVISION) AMP_BRANCH=$$(git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown); \
	if git describe --exact-match --tags HEAD >/dev/null 2>&1 && [ -z "$$(git status --porcelain)" ]; then \
	  $(GORELEASER) release --clean --skip=publish; \
	else \
	  $(GORELEASER) release --snapshot --clean; \
	fi
	bash scripts/release-check.sh dist

# The Helm chart's Deployment run on that image by podman kube play
# (with the helm that make test's dependencies bring).
chart-image-test: image
	@bash scripts/platform-deps.sh podman:podman runc:runc catatonit:catatonit
	@helm=$$(if [ -f scripts/test-deps.sh ]; then bash scripts/test-deps.sh helm-path; \
	  else test -x .cache/bin/helm || bash .ci/helm-check >&2; echo $(CURDIR)/.cache/bin/helm; fi); \
	bash deploy/image/chart-test.sh $(IMAGE_TAR) $(IMAGE_VERSION) $$helm

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./parser/thread ./source/threads

ci: lint test fuzz
