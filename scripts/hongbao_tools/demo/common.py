"""The demo's scenario in figures: the sender, the deposit, the two packets, the coupon drop."""

SENDER = "alice"
DEPOSIT_CENTS = 20_000
LUCKY_TOTAL, LUCKY_COUNT = 10_000, 100
FIXED_TOTAL, FIXED_COUNT = 1_000, 10
GREETING = "恭喜发财，红包拿来"
DROP_CODES = 100
DROP_REDEEMED = 5
