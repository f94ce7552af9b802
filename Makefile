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

.PHONY: build test unit e2e e2e-rw2 rules dashboards helm-check chart-sync lint fuzz bench ci
.PHONY: cross

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o amp-exporter ./cmd/amp-exporter

# The whole suite: unit tests with the race detector (parsers, collector,
# sources, config, binary), the alert rules under promtool, the dashboards'
# generator and checks, the Helm chart under a real helm, then the
# end-to-end tests against a real Prometheus.
test: test-deps unit rules dashboards helm-check e2e

# What the suite needs, pinned and cached under .cache/ (see the script).
.PHONY: test-deps
test-deps:
	bash scripts/test-deps.sh

unit:
	$(GO) test -race -count=1 ./...

# Test artifacts (the landing page's screenshot) stay in .cache/e2e-artifacts.
e2e:
	rm -rf .cache/e2e-artifacts && mkdir -p .cache/e2e-artifacts
	$(GO) test -tags e2e -race -count=1 -timeout 20m -artifacts -outputdir $(CURDIR)/.cache/e2e-artifacts ./e2e/

# Remote-write 2.0 against a Prometheus 3 built from the module proxy (a few
# minutes the first time, then cached in .cache/prom3); not part of `make test`.
PROMETHEUS3_VERSION ?= v0.316.0
e2e-rw2:
	@test -x .cache/prom3/prometheus || GOBIN=$(CURDIR)/.cache/prom3 $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS3_VERSION)
	PROMETHEUS3=$(CURDIR)/.cache/prom3/prometheus $(GO) test -tags 'e2e rw2' -count=1 -timeout 10m -run TestRemoteWrite2AgainstPrometheus3 ./e2e/

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
	cd dashboards/gen && $(GO) vet ./... && $(STATICCHECK) ./...
	cd deploy/helm/manifest-test && $(GO) vet ./... && $(STATICCHECK) ./...

# A short run of every fuzz target; the corpus lives in testdata/fuzz.
fuzz:
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzSkipBlocks -fuzztime $(FUZZTIME)
	$(GO) test ./internal/jsonscan -run '^$$' -fuzz FuzzSkipEnd -fuzztime $(FUZZTIME)
	$(GO) test ./parser/thread -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./parser/thread -run '^$$' -fuzz FuzzParseTimestamp -fuzztime $(FUZZTIME)
	$(GO) test ./parser/streamjson -run '^$$' -fuzz FuzzParseLine -fuzztime $(FUZZTIME)
	$(GO) test ./parser/sse -run '^$$' -fuzz FuzzParser -fuzztime $(FUZZTIME)
	$(GO) test ./parser/amy -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME)

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./parser/thread ./source/threads

ci: lint test fuzz
