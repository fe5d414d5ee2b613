# isobench: `make demo` (install, build, compare native and Docker) and
# `make test` (install what the tests need, then run them all).
GO      ?= go
BIN     := bin/isobench
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
LDFLAGS := -s -w -X github.com/isobench/isobench/internal/hostinfo.Version=$(VERSION) -X github.com/isobench/isobench/internal/hostinfo.commit=$(COMMIT)
export CGO_ENABLED := 0

# Go: the go on PATH when it is as new as go.mod asks, else the toolchain
# scripts/setup.sh fetches for go.mod's version into /usr/local/lib/isobench-go
# (demo and test run it first; see its header for what it downloads).
ifneq ($(shell scripts/setup.sh go-ok && echo ok),ok)
export PATH := /usr/local/lib/isobench-go/bin:$(PATH)
endif

# Platforms whose conformance suite must run (fail instead of skip) in `make test`.
REQUIRED_PLATFORMS ?= native,docker,runc,crun,nspawn,lxc,qemu,podman,gvisor,lxd,remote

.PHONY: build cross fuzz demo test test-k8s unit vet deps-demo deps-test clean

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/isobench

# The agent for FreeBSD jails and ARM hosts (static, like the main build).
CROSS := freebsd/amd64 freebsd/arm64 linux/arm64
cross:
	@for t in $(CROSS); do \
	  echo "cross: $$t"; \
	  GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/isobench-$${t%/*}-$${t#*/} ./cmd/isobench || exit 1; \
	done

# Every fuzz target briefly (FUZZTIME each: a count of inputs, e.g. 20000x,
# or a duration; see scripts/fuzz-brief.sh for why the default is a count).
FUZZTIME ?= 20000x
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

# The k8s suite needs the single-node cluster scripts/build-k8s.sh builds
# (about an hour cold, more than CI's budget; cached in /var/cache/isobench/k8s):
# `make test` starts it (scripts/start-k8s.sh) and runs the k8s suite only when
# those binaries are built already, and stops it again if it started it; k8s
# is not required there. `make test-k8s` builds, starts and requires it.
test: deps-test build cross vet
	@k8s=skip; \
	if scripts/build-k8s.sh --cached 2>/dev/null; then \
	  if scripts/start-k8s.sh status | grep -q '^kubelet running'; then k8s=running; \
	  elif scripts/start-k8s.sh; then k8s=started; \
	  else echo "make test: the k8s cluster did not start (logs in /var/log/isobench-k8s): its suite skips"; k8s=failed; fi; \
	else echo "make test: skipping k8s: its cluster is not built ('make test-k8s' builds it, about an hour the first time, and runs its suite)"; fi; \
	echo "ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 40m ./..."; \
	ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 40m ./...; rc=$$?; \
	if [ $$k8s = started ]; then scripts/start-k8s.sh stop; fi; \
	exit $$rc
	$(MAKE) fuzz

# Build (cached) and start the single-node cluster, then run the k8s
# platform's conformance suite (runc and gvisor RuntimeClasses) against it.
# The cluster keeps running afterwards (scripts/start-k8s.sh stop stops it).
test-k8s: build
	scripts/build-k8s.sh
	scripts/start-k8s.sh
	ISOBENCH_REQUIRE_PLATFORMS=k8s $(GO) test -count=1 -timeout 30m ./internal/platform/k8s/...

clean:
	rm -rf bin demo.db demo.db-wal demo.db-shm
