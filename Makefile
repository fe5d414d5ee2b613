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
REQUIRED_PLATFORMS ?= native,docker,runc,crun,nspawn,lxc,qemu,podman,gvisor,lxd,remote,k8s

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
# (21.5 CPU-minutes cold: 33 min on this 2-core host at load average 12,
# about 11 min idle; cached in /var/cache/isobench/k8s, outside the
# repository, and reused; it installs the Debian packages it needs). When REQUIRED_PLATFORMS names k8s
# (it does by default), `make test` builds the cluster unless it is cached,
# starts it unless it runs (scripts/start-k8s.sh), requires the k8s suite and
# stops the cluster again if it started it; a cluster that cannot be built or
# started fails `make test` with one line saying so.
test: deps-test build cross vet
	@k8s=no; \
	case ",$(REQUIRED_PLATFORMS)," in *,k8s,*|*,all,*) k8s=yes ;; esac; \
	if [ $$k8s = yes ]; then \
	  scripts/build-k8s.sh || { echo "make test: FAILED: the k8s cluster could not be built (scripts/build-k8s.sh, above, says why)"; exit 1; }; \
	  if scripts/start-k8s.sh status | grep -q '^kubelet running'; then k8s=running; \
	  elif scripts/start-k8s.sh; then k8s=started; \
	  else echo "make test: FAILED: the k8s cluster did not start (logs in /var/log/isobench-k8s); stopping what started"; scripts/start-k8s.sh stop; exit 1; fi; \
	fi; \
	echo "ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 40m ./..."; \
	ISOBENCH_REQUIRE_PLATFORMS=$(REQUIRED_PLATFORMS) $(GO) test -count=1 -timeout 40m ./...; rc=$$?; \
	if [ $$k8s = started ]; then scripts/start-k8s.sh stop; fi; \
	exit $$rc
	$(MAKE) fuzz
	# the network fidelity script in its smoke mode (one 1 s round): it
	# must still measure every pair it compares, or it has rotted
	SMOKE=1 bench/fidelity-net.sh
	# the truth suite in its smoke mode (native, 3 repetitions, one round):
	# every control must still read a number, or it has rotted
	SMOKE=1 bench/truth.sh

# Build (cached; scripts/build-k8s.sh installs the Debian packages it and the
# cluster need) and start the single-node cluster, then run the k8s
# platform's conformance suite (runc and gvisor RuntimeClasses) against it.
# The cluster keeps running afterwards (scripts/start-k8s.sh stop stops it).
test-k8s: build
	scripts/build-k8s.sh
	scripts/start-k8s.sh
	ISOBENCH_REQUIRE_PLATFORMS=k8s $(GO) test -count=1 -timeout 30m ./internal/platform/k8s/...

clean:
	rm -rf bin demo.db demo.db-wal demo.db-shm
