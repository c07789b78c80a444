"""The sections of `scripts/e2e_rie.py` (every events/ fixture and more through the Lambda
Runtime Interface Emulator), one module per feature or concern. Each section is a function
`(stack, checks, state, ...)`: `stack` the `rie.LocalStack`, `checks` the `checks.Checks`
recorder, `state` the `common.State` sections hand on to the next.

* `common` — the shared state, the contract's regular expressions, the red-packet body check.
* `packets` (and `wallet`) — the red-packet and wallet fixtures.
* `chat_packets`, `order_codes`, `voting`, `coupons`, `merchants` — each feature's fixtures.
* `concurrency`, `expiry` — one packet grabbed by many at once; a packet expiring.
* `runtime` — settings per function, EMF metric lines, no credentials in logs, conservation.
* `latency` — cold starts, warm latency and their table.
"""
