"""The steps of `scripts/demo.py` (the red-packet scenario under the Lambda Runtime Interface
Emulator), one module per feature, each with the part of the report it prints.

* `common` — the scenario's figures (sender, deposit, packets, the coupon drop).
* `packets` — `play`: the red-packet scenario from cold starts to reclaim-cron, the audits,
  then the other steps in turn; the red-packet report.
* `history`, `coupons`, `chat_packets`, `ledger` — the history, the coupon drop, the chat
  packets and the ledger feed, each a step with its report.
"""
