# Glassbox: `make run` serves the demo, `make test` runs the test suite.
# Both build the virtualenv from the project's own files, so they work on a fresh machine.

VENV := .venv
PY := $(VENV)/bin/python
# Glassbox's own modules, compiled before the tests start their processes (see .venv below).
SOURCES := manage.py project chat activity tests bench
PORT ?= 8000
# Django 6 needs Python 3.12 or newer; pyenv installs are found even when not selected.
PYTHON ?= $(shell for v in 3.12 3.13; do \
	  c=$$(command -v python$$v 2>/dev/null) && PYENV_VERSION=$$(pyenv versions --bare 2>/dev/null | grep "^$$v" | tail -n1) \
	    python$$v -c 'import sys; print(sys.executable)' 2>/dev/null && break; \
	done)

# A question is at most 8,000 characters: no socket message needs more than 64 KiB.
DAPHNE_LIMITS := --websocket-max-message-size 65536 --websocket-max-frame-size 65536

# The translation catalogues: locale/*/django.po are the source, compiled at set-up.
CATALOGUES := $(patsubst %.po,%.mo,$(wildcard locale/*/LC_MESSAGES/django.po))
LANGUAGES := it zh_Hant

.PHONY: run admin test lint new-event-experiment format bench fuzz phoenix litellm messages clean clients ext-apps catalogues conformance conformance-all conformance-auth

# Each virtualenv's pinned requirements are installed by uv (pinned too, installed with pip
# first): the same versions pip resolves, in seconds where pip took a minute and a half of a
# fresh machine's CI. $(call install,VENV,REQUIREMENTS)
UV := uv==0.13.9
define install
$(1)/bin/python -m pip install --quiet $(UV)
$(1)/bin/uv pip install --quiet --python $(1)/bin/python -r $(2)
endef

# The modules are compiled once here, on every core. Python would otherwise compile them on
# every process's start where PYTHONDONTWRITEBYTECODE is set: 4.5 s of CPU for each server,
# worker and command the tests start. A package's file that does not compile (a template, a
# test fixture) is left uncompiled.
$(VENV)/.installed: requirements.txt requirements-dev.txt
	@test -x $(PY) || test -n "$(PYTHON)" || { echo "Glassbox needs Python 3.12 or newer (Django 6)." >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(call install,$(VENV),requirements-dev.txt)
	$(PY) -m compileall -qq -j 0 $(VENV)/lib || true
	touch $@

%.mo: %.po $(VENV)/.installed
	$(VENV)/bin/pybabel compile --statistics -i $< -o $@
catalogues: $(CATALOGUES)

# The demo MCP server (chat/agent/mcp/demo_server.py), started by Glassbox over stdio. A
# GLASSBOX_MCP_SERVERS of your own replaces it.
DEMO_MCP := [{"name": "surveys", "command": "$(abspath $(PY))", "args": ["-m", "chat.agent.mcp.demo_server"]}]
run: export GLASSBOX_MCP_SERVERS ?= $(DEMO_MCP)

run: $(VENV)/.installed $(CATALOGUES)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py seed_demo
	@echo ""
	@echo "  Glassbox is running at http://127.0.0.1:$(PORT)/"
	@echo "  Log in as demo / demo (an admin account of your own: make admin)"
	@echo "  Ctrl+C stops it"
	@echo ""
	$(PY) -m project.serve -b 127.0.0.1 -p $(PORT) $(DAPHNE_LIMITS) project.asgi:application

# An admin account (Django admin, the audit, MCP servers) in the database `make run` serves
# (DATABASE_URL, by default db.sqlite3), migrated first so it works before the first run. It
# asks for a name and password; with DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL and
# DJANGO_SUPERUSER_PASSWORD set it asks nothing.
admin: $(VENV)/.installed
	$(PY) manage.py migrate --noinput --verbosity 0
	$(PY) manage.py createsuperuser $(if $(DJANGO_SUPERUSER_PASSWORD),--noinput)

# Most of the suite waits on servers, sockets and the browser, so more processes than cores
# pay; each has its own test database (pytest-django names it after the worker). A process
# that runs out of tests takes some of another's queue (worksteal): handed out once, the last
# slow tests left one process working while the others waited.
# The slowest tests are listed at the end: where the suite's time goes, run after run.
# pytest keeps each test module with its asserts rewritten only where Python may write
# bytecode: where PYTHONDONTWRITEBYTECODE is set, each test process rewrote all 250 of them
# again, 8 of its 14 s of CPU collecting the suite.
TEST_PROCESSES ?= 3
test: $(VENV)/.installed $(CATALOGUES)
	$(PY) -m compileall -q -j 0 $(SOURCES)
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(TEST_PROCESSES) --dist worksteal --durations=30 --durations-min=5 $(PYTEST_ARGS)

# The standard clients the stream tests read AG-UI and the UI message stream with (pinned in
# clients/package-lock.json, Node 22 among them: the `ai` package needs it).
CLIENTS := clients/node_modules/.installed
$(CLIENTS): clients/package.json clients/package-lock.json
	cd clients && npm ci --no-audit --no-fund --loglevel=error
	touch $@
clients: $(CLIENTS)

# An MCP server with an app built with @modelcontextprotocol/ext-apps (pinned in
# ext-apps/package-lock.json): the browser tests show its interface in the feed.
EXT_APPS := ext-apps/node_modules/.installed
$(EXT_APPS): ext-apps/package.json ext-apps/package-lock.json
	cd ext-apps && npm ci --no-audit --no-fund --loglevel=error
	touch $@
ext-apps: $(EXT_APPS)

# Style, types (mypy with django-stubs; its files are listed in pyproject.toml) and the import
# boundaries between the parts (import-linter contracts, also in pyproject.toml).
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# Issue 52's experiment: one new event type declared in a copy of the tree must make mypy name
# every surface that shows, exports or maps events (about 10 s with mypy's cache).
new-event-experiment: $(VENV)/.installed
	$(PY) .ci/experiments/new_event_type.py

format: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The API fuzzer lives in a virtualenv of its own: its pytest plugin stays out of the tests.
FUZZ_VENV := .venv-fuzz

$(FUZZ_VENV)/.installed: requirements-fuzz.txt
	@test -x $(FUZZ_VENV)/bin/python || test -n "$(PYTHON)" || { echo "Glassbox needs Python 3.12 or newer (Django 6)." >&2; exit 1; }
	test -x $(FUZZ_VENV)/bin/python || $(PYTHON) -m venv $(FUZZ_VENV)
	$(call install,$(FUZZ_VENV),requirements-fuzz.txt)
	touch $@

fuzz: $(VENV)/.installed $(FUZZ_VENV)/.installed $(CATALOGUES)
	$(PY) tests/fuzz_api.py $(FUZZ_VENV)/bin/st

# Arize Phoenix, a trace backend (docs/telemetry.md), in a virtualenv of its own: the trace
# tests send to it when it is installed (CI installs it).
PHOENIX_VENV := .venv-phoenix

$(PHOENIX_VENV)/.installed: requirements-phoenix.txt
	@test -x $(PHOENIX_VENV)/bin/python || test -n "$(PYTHON)" || { echo "Glassbox needs Python 3.12 or newer (Django 6)." >&2; exit 1; }
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(call install,$(PHOENIX_VENV),requirements-phoenix.txt)
	touch $@

phoenix: $(PHOENIX_VENV)/.installed

# LiteLLM's proxy, which the Responses tests put in front of a scripted Chat Completions model
# (tests/support/litellm.py): a server of its own, in a virtualenv of its own like Phoenix's.
LITELLM_VENV := .venv-litellm

# Compiled once here, as Glassbox's own: the proxy's first start compiled what it imported, 6 s
# of its test's 15 on an idle machine.
$(LITELLM_VENV)/.installed: requirements-litellm.txt
	@test -x $(LITELLM_VENV)/bin/python || test -n "$(PYTHON)" || { echo "Glassbox needs Python 3.12 or newer (Django 6)." >&2; exit 1; }
	test -x $(LITELLM_VENV)/bin/python || $(PYTHON) -m venv $(LITELLM_VENV)
	$(call install,$(LITELLM_VENV),requirements-litellm.txt)
	$(LITELLM_VENV)/bin/python -m compileall -qq -j 0 $(LITELLM_VENV)/lib || true
	touch $@

litellm: $(LITELLM_VENV)/.installed

# The MCP conformance suite (npm @modelcontextprotocol/conformance) drives Glassbox's own MCP
# client (conformance/client.py). It needs Node 22, which comes from the npm registry as the
# `node` package: both pinned in conformance/package.json and its lock, installed there.
CONFORMANCE_BIN := $(abspath conformance/node_modules/.bin)
CONFORMANCE_CLIENT := $(abspath $(PY)) $(abspath conformance/client.py)
# The elicitation scenarios; `make conformance-all` runs every client scenario.
CONFORMANCE_SCENARIOS ?= elicitation-sep1034-client-defaults

conformance/node_modules/.installed: conformance/package.json conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund
	touch $@

conformance: $(VENV)/.installed conformance/node_modules/.installed
	@for scenario in $(CONFORMANCE_SCENARIOS); do \
	  PATH="$(CONFORMANCE_BIN):$$PATH" conformance client --command "$(CONFORMANCE_CLIENT)" \
	    --scenario $$scenario -o conformance/results || exit 1; \
	done

# Every client scenario, against the baseline of those Glassbox does not pass yet
# (conformance/expected-failures.yml); a scenario that starts passing fails until removed.
# One at a time, not as `--suite all`: its 26 clients starting at once on two cores delayed
# sse-retry's reconnection past the 700 ms the scenario allows (833 ms measured).
conformance-all: $(VENV)/.installed conformance/node_modules/.installed
	@export PATH="$(CONFORMANCE_BIN):$$PATH"; off=""; \
	scenarios=$$(conformance list --client | sed -n 's/^  - \([^ ]*\).*/\1/p'); \
	test -n "$$scenarios" || { echo "the suite listed no client scenario" >&2; exit 1; }; \
	for scenario in $$scenarios; do \
	  conformance client --command "$(CONFORMANCE_CLIENT)" --scenario $$scenario \
	    --timeout 90000 --expected-failures conformance/expected-failures.yml \
	    -o conformance/results || off="$$off $$scenario"; \
	done; \
	test -z "$$off" || { echo "Not as conformance/expected-failures.yml says:$$off" >&2; exit 1; }

# The MCP conformance suite's client authorization scenarios against the per-user OAuth
# client; Node 22 and the suite are pinned npm packages (conformance/auth/package-lock.json).
AUTH_SUITE := conformance/auth
$(AUTH_SUITE)/node_modules/.installed: $(AUTH_SUITE)/package-lock.json
	cd $(AUTH_SUITE) && npm ci --no-audit --no-fund
	touch $@

conformance-auth: $(VENV)/.installed $(AUTH_SUITE)/node_modules/.installed
	PYTHON=$(CURDIR)/$(PY) $(AUTH_SUITE)/run.sh

# The MCP reference servers' test server, whose sampling tool tests/chat/test_sampling_everything.py
# approves and denies; Node 22 and the server are pinned npm packages (its package-lock.json).
conformance/everything/node_modules/.installed: conformance/everything/package-lock.json
	cd conformance/everything && npm ci --no-audit --no-fund
	touch $@


BENCHMARKS := first_status first_status_cold event_overhead concurrency db_writes turn_statements question_checks history_page export markdown_frames mcp_progress mcp_answer html_clients workers audit_chain otel_turn

# What each statement kept in project.sql costs next to its ORM twin.
BENCHMARKS += hand_sql
# What a hostile MCP server's calls cost another user's requests.
BENCHMARKS += hostile_servers
bench: $(VENV)/.installed $(CATALOGUES)
	@for name in $(BENCHMARKS); do echo "== bench/$$name.py"; PYTHONPATH=. $(PY) bench/$$name.py || exit 1; done

# After changing a translatable text: refresh the catalogues' msgids (needs GNU gettext's
# xgettext), then translate what is new in each locale/*/LC_MESSAGES/django.po.
messages: $(VENV)/.installed
	$(PY) manage.py makemessages $(addprefix -l ,$(LANGUAGES)) --add-location file --no-obsolete \
	  -i ".venv/*" -i "staticfiles/*" -i "tests/*" -i "bench/*" -i "docs/*" -i "conformance/*"

clean:
	rm -rf $(VENV) $(FUZZ_VENV) staticfiles db.sqlite3 $(CATALOGUES)
