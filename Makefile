# isobench: `make demo` (install, build, compare native and Docker) and
# `make test` (install what the tests need, then run them all).
GO      ?= go
BIN     := bin/isobench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/isobench/isobench/internal/hostinfo.Version=$(VERSION)
export CGO_ENABLED := 0

# Platforms whose conformance suite must run (fail instead of skip) in `make test`.
REQUIRED_PLATFORMS ?= native,docker,runc,crun,nspawn,lxc,qemu,podman,gvisor,lxd

.PHONY: build demo test unit vet deps-demo deps-test clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/isobench

deps-demo:
	scripts/setup.sh demo

deps-test:
	scripts/setup.sh test

# The main job: native vs Docker, cpu and startup, at 1 and 2 instances.
demo: deps-demo build
	$(BIN) run --platform native --platform docker \
	  --workload cpu:threads=2,max-prime=10000,duration=5s --workload startup \
	  --instances 1,2 --reps 5 --warmup 1 --db demo.db

vet:
	$(GO) vet ./...

# Unit tests only (no engines needed).
unit:
	$(GO) test -short ./...

test: deps-test build vet
	ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 28m ./...

clean:
	rm -rf bin demo.db demo.db-wal demo.db-shm
