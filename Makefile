# isobench: `make demo` (install, build, compare native and Docker) and
# `make test` (install what the tests need, then run them all).
GO      ?= go
BIN     := bin/isobench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/isobench/isobench/internal/hostinfo.Version=$(VERSION)
export CGO_ENABLED := 0

# Platforms whose conformance suite must run (fail instead of skip) in `make test`.
REQUIRED_PLATFORMS ?= native,docker,runc,crun,nspawn,lxc,qemu,podman,gvisor,lxd,remote

.PHONY: build cross fuzz demo test unit vet deps-demo deps-test clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/isobench

# The agent for FreeBSD jails and ARM hosts (static, like the main build).
CROSS := freebsd/amd64 freebsd/arm64 linux/arm64
cross:
	@for t in $(CROSS); do \
	  echo "cross: $$t"; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/isobench-$${t%/*}-$${t#*/} ./cmd/isobench || exit 1; \
	done

# Every fuzz target briefly (FUZZTIME each).
FUZZTIME ?= 5s
fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz-brief.sh

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

test: deps-test build cross vet
	ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 40m ./...
	$(MAKE) fuzz

clean:
	rm -rf bin demo.db demo.db-wal demo.db-shm
