# Every target builds .venv on first use, so a fresh clone needs nothing but `make demo` / `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint eval eval-cache bench schema vectors reference docs clean sandbox browser toolchains claude-code harnesses

$(BIN)/claim: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[observe,sign,serve,browser,dev,docs]'
	# Bytecode, as an installed wheel has it: every `claim` process (a stop hook's, each test's)
	# would otherwise compile its modules again where PYTHONDONTWRITEBYTECODE is set.
	$(BIN)/python -m compileall -q src >/dev/null
	touch $(BIN)/claim

# `claim observe test-run` runs tests in a bubblewrap sandbox and refuses to run without one.
sandbox:
	@command -v bwrap >/dev/null && command -v setpriv >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -q && apt-get install -y -q bubblewrap util-linux; \
	  else \
	    echo "bubblewrap (bwrap) is missing: run 'sudo apt-get install bubblewrap' (the test-run observer needs it)" >&2; \
	    exit 1; \
	  fi; }

# claim observe dom and the dashboard's browser tests drive Debian's Chromium (Playwright cannot
# download its own here).
browser:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -q && apt-get install -y -q chromium; \
	  else \
	    echo "chromium is missing: run 'sudo apt-get install chromium' (claim observe dom and the dashboard tests need it)" >&2; \
	    exit 1; \
	  fi; }

# The toolchains the runner tests use, from Debian: Go, Rust (when no rustup toolchain is on
# PATH), Java: Maven with the Surefire, compiler and resources plugins, Gradle, JUnit 4 and 5
# (Maven Central and Gradle's distributions are not reachable here: Debian's packages fill
# /usr/share/maven-repo, which the Java tests build from offline). Node comes with the machine;
# npm packages come from the registry through the observer's dependency cache.
toolchains:
	@missing=""; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	command -v cargo >/dev/null || missing="$$missing cargo"; \
	command -v java >/dev/null || missing="$$missing default-jdk-headless"; \
	test -f /usr/share/java/junit-platform-console-standalone.jar || missing="$$missing junit5"; \
	command -v mvn >/dev/null || missing="$$missing maven"; \
	command -v gradle >/dev/null || missing="$$missing gradle"; \
	plugins=/usr/share/maven-repo/org/apache/maven/plugins; \
	test -d $$plugins/maven-surefire-plugin || missing="$$missing libsurefire-java"; \
	test -d $$plugins/maven-compiler-plugin || missing="$$missing libmaven-compiler-plugin-java"; \
	test -d $$plugins/maven-resources-plugin || missing="$$missing libmaven-resources-plugin-java"; \
	test -d /usr/share/maven-repo/junit/junit || missing="$$missing junit4"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -q && apt-get install -y -q $$missing; \
	  else \
	    echo "missing toolchains: run 'sudo apt-get install$$missing' (the runner tests need them)" >&2; \
	    exit 1; \
	  fi; \
	fi

demo: $(BIN)/claim sandbox
	$(BIN)/python examples/demo.py

# The evaluation on real projects (eval/corpus.toml): the gate, believing the agent and each
# project's own test command, side by side; docs/evaluation.md is written from its table. The
# projects are fetched once, pinned by sha256, into ~/.cache/completion-claim-eval
# (COMPLETION_CLAIM_EVAL_CACHE), and the results go there too (COMPLETION_CLAIM_EVAL_RESULTS).
# EVAL_ARGS narrows a run: EVAL_ARGS="--project six --setup newcomer".
eval-cache: $(BIN)/claim
	$(BIN)/python -m eval.fetch

eval: $(BIN)/claim sandbox toolchains eval-cache
	$(BIN)/python -m eval $(EVAL_ARGS)

lint: $(BIN)/claim
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# A pytest-xdist worker a core. Tests also wait (timeouts, sleeps, servers starting), so more
# workers than cores can finish sooner on an idle machine (WORKERS=4), at the price of the
# time-bound tests and every other job racing for the CPU; WORKERS=0 runs in this process.
# loadgroup hands tests out one at a time, for balance (a module's fixtures then run once a
# worker), and keeps on one worker the tests that share an xdist_group mark.
WORKERS ?= auto

test: lint sandbox browser toolchains eval-cache
	$(BIN)/pytest -q -n $(WORKERS) --dist loadgroup

# The real Claude Code CLI for tests/gate/e2e, cached per machine outside the repo; the tests
# install it themselves on first use, this only does it ahead (a CI cache step, say).
claude-code: $(BIN)/claim
	$(BIN)/python -m tests.gate.e2e.claude_code

# Every harness CLI the end-to-end tests drive (Claude Code, Codex, Copilot, Gemini CLI from npm;
# OpenHands from PyPI under Python 3.12), pinned and cached per machine in the same way.
harnesses: $(BIN)/claim
	$(BIN)/python -m tests.gate.e2e.clis

# Each benchmark measuring one of the goals adds its figure to this file; goals.py prints them last.
bench: export CLAIM_BENCH_FIGURES = $(CURDIR)/build/bench-figures.json
bench: $(BIN)/claim sandbox
	rm -f $(CLAIM_BENCH_FIGURES)
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/sandbox.py
	$(BIN)/python benchmarks/canaries.py
	$(BIN)/python benchmarks/monitor.py
	$(BIN)/python benchmarks/load.py
	$(BIN)/python benchmarks/ledger.py
	$(BIN)/python benchmarks/ecosystems.py
	$(BIN)/python benchmarks/scaling.py
	$(BIN)/python benchmarks/goals.py

# Regenerate committed artefacts; tests fail when the committed copies drift from these.
schema: $(BIN)/claim
	$(BIN)/python -m completion_claim._schemagen > src/completion_claim/schema/claim.schema.json

vectors: $(BIN)/claim
	$(BIN)/python conformance/generate.py

# docs/cli.md from the click commands, docs/concepts.md from the `claim help` topics.
reference: $(BIN)/claim
	$(BIN)/python -m completion_claim.cli._reference docs

# The site, into site/; --strict fails on a broken link or anchor.
docs: reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build dist site
