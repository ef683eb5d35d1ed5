# Tandem's front door. `make test` and `make serve` work on a fresh Debian 12
# machine: they install what they need (apt-get, as root, no prompt), build,
# then test or serve.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CONFIG ?= configs/local.yaml

# The exact Debian packages the build, the tests and the tools need.
DEBIAN_PACKAGES := g++ cmake make pkg-config git \
  libopenblas-openmp-dev libyaml-cpp-dev libboost-dev nlohmann-json3-dev libpcre2-dev \
  libopenmpi-dev openmpi-bin libgtest-dev libgmock-dev libbenchmark-dev \
  libcli11-dev python3 python3-numpy nodejs prometheus curl procps iproute2 nftables \
  munge slurmctld slurmd slurm-client
# libcli11-dev: the command lines of tandem, tandem-bench, tandem-loadtest and tandem-soak.
# prometheus: its promtool checks our /metrics exposition in the tests.
# curl, procps (pgrep, pkill): the end-to-end scripts that drive MPI jobs.
# iproute2 (ip): the multihost tests' testbed of network namespaces.
# nftables (nft): random loss on a testbed link (multihost_fault_lossy_link).
# munge slurmctld slurmd slurm-client: Slurm 22.05 on that testbed
# (tools/cluster/testbed_daemons.sh; about 12 MiB, with the pmix MPI plugin).
# Only for retraining the tiny models (tools/train/), not for build or test.
TRAIN_PACKAGES := python3-torch python3-numpy nodejs
# Only for `make fuzz` (tests/fuzz/): clang and its runtime libraries
# (libFuzzer, ASan, UBSan). Debian's libfuzzer-14-dev is not needed: clang's
# -fsanitize=fuzzer links the libFuzzer of libclang-rt-14-dev.
FUZZ_PACKAGES := clang-14 libclang-rt-14-dev

# `make fuzz`: build the fuzzers in FUZZ_DIR, run each for FUZZ_SECONDS.
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60

.PHONY: deps train-deps fuzz-deps build test test-sanitize fuzz serve clean

deps: PACKAGES = $(DEBIAN_PACKAGES)
train-deps: PACKAGES = $(TRAIN_PACKAGES)
fuzz-deps: PACKAGES = $(DEBIAN_PACKAGES) $(FUZZ_PACKAGES)
deps train-deps fuzz-deps:
	@missing=$$(for p in $(PACKAGES); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q "install ok installed" || echo $$p; \
	  done); \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "make deps: installing $$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else echo "make deps: all Debian packages present"; fi

build: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 1500

# `make test-sanitize`: the GoogleTest suites built with AddressSanitizer,
# LeakSanitizer and UndefinedBehaviorSanitizer (-DTANDEM_SANITIZE=ON, CPU
# only) in a tree of their own, run by ctest; any report fails its test.
# SANITIZE_SUITES names the test binaries (each one's cases carry its name as
# a ctest label): only they and what they link are built. Left out: the MPI
# and GPU tests and the end-to-end scripts (docs/testing.md says why).
# Every suite by default; .ci/run names the subset CI can afford.
SANITIZE_DIR ?= build-sanitize
SANITIZE_SUITES ?= tokenizer_tests jinja_tests jinja_conformance_tests coordinator_tests \
  server_tests cluster_tests transport_tests loadtest_tests kernels_tests workers_tests
# Exported to the build too: gtest's test discovery runs each binary.
# halt_on_error: the first report ends the process, so its test fails.
# tests/sanitize/*.supp hold the third-party reports we do not own.
SANITIZE_ENV := ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$(CURDIR)/tests/sanitize/ubsan.supp \
  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp
empty :=
space := $(empty) $(empty)
sanitize_labels = ^($(subst $(space),|,$(strip $(SANITIZE_SUITES))))$$

test-sanitize: deps
	@cmake -S . -B $(SANITIZE_DIR) -DCMAKE_BUILD_TYPE=Release -DTANDEM_SANITIZE=ON \
	  -DTANDEM_UNITY_TESTS=OFF >/dev/null
	@$(SANITIZE_ENV) cmake --build $(SANITIZE_DIR) -j $(JOBS) --target $(SANITIZE_SUITES)
	@cd $(SANITIZE_DIR) && $(SANITIZE_ENV) ctest --output-on-failure -j $(JOBS) --timeout 1500 \
	  -L '$(sanitize_labels)'

fuzz: fuzz-deps
	@cmake -S tests/fuzz -B $(FUZZ_DIR) -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
	@cmake --build $(FUZZ_DIR) -j $(JOBS)
	@tests/fuzz/run_fuzzers.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

serve: build
	@$(BUILD_DIR)/tandem serve --config $(CONFIG)

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR) $(FUZZ_DIR)
