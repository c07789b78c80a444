"""hongbao's Python tools: what the scripts in scripts/ and tests/ share, one job per module.

* `paths` — where things are: the repository, events/, the cargo target dir, the venv.
* `procs` — starting processes in their own session, killing them (and their children) on
  every way out, free loopback ports; `run_main`, a script's entry point (exit 130 on Ctrl-C).
* `deps` — finding what the scripts run: the Lambda Runtime Interface Emulator, `redis-server`,
  the release function binaries and the `hongbao` examples; runs scripts/install-deps.sh when
  something installable is missing.
* `redis_server` — a private `redis-server` on a free port, with a redis-py client.
* `rie` — Lambda sandboxes (one RIE process running one bootstrap), pools of them, and a local
  stack (a Redis plus a pool per function).
* `events` — API Gateway v2 and EventBridge events built from the events/ fixtures.
* `serve_api` — the `serve` example (the whole HTTP API on one port) and HTTP calls to it.
* `guide` — a task guide's requests (docs/checkout.md) read from the page, with the answers
  it promises, for `make serve-check` to play.
* `checks` — the one check recorder (PASS/FAIL lines, a crashed section as a failed check, a
  summary) and the money-conservation check the demo and the end-to-end tests share.
* `report` — numbers and text for reports: money, percentiles, RFC 3339 times, histograms,
  phase timings.
* `e2e/`, `demo/`, `sam_local/` — the parts of scripts/e2e_rie.py, scripts/demo.py and
  scripts/sam_local.py, one module per feature or step (each package's docstring lists them).

The scripts run from the repository root as `.venv/bin/python scripts/<name>.py`: Python puts
scripts/ on `sys.path`, so `import hongbao_tools` needs nothing more.
"""
