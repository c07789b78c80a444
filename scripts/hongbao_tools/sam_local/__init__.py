"""The parts of `scripts/sam_local.py` (`make sam-local`): every function run by `sam local
invoke` and `sam local start-api` through the real template.yaml, in Docker.

* `sam` — the `sam` CLI's environment, `sam build`, the built template's functions and
  routes, the template parameters for an existing store.
* `invoke` — `sam local invoke` of one function with one event, checked against openapi.json.
* `fixtures` — every events/*.json fixture on a standalone store and on a cluster.
* `start_api` — the `sam local start-api` session over HTTP.
"""
