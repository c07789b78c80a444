//! Daily order codes: `yyMMdd` of the business day plus a random-looking suffix that is unique
//! within the day (`POST /order-codes`, the next-order-code function; the design starts from
//! seed 001, the source blog post on 11-digit daily order codes, corrected below).
//!
//! A code is 6 + `d` decimal digits (`d` = `HONGBAO_ORDER_CODE_DIGITS`, 5 to 7), e.g.
//! `26112184817` for the 5-digit default: the business day 2026-11-21 and the suffix `84817`.
//! A suffix never starts with 0: the suffixes of a day are `10^(d-1) ..= 10^d - 1`,
//! `9 * 10^(d-1)` of them (90,000 for `d = 5`). Within a day they come in a secret order that
//! differs every day, so two codes tell nothing about the number of orders between them.
//!
//! # How a code is made
//!
//! 1. **One script, one round trip** (`next/order_code.lua`): it reads Redis `TIME`, finds the
//!    UTC offset of the configured IANA zone at that instant, hence the business day, and takes
//!    `count` consecutive *positions* `p .. p + count` of that day's counter, all or none: when
//!    `p + count` would pass the day's `9 * 10^(d-1)` positions it answers `exhausted` and takes
//!    nothing (the seed's counter wrapped back to its start here and handed out the day's codes
//!    a second time). The day and the positions are decided in the same atomic step, so a
//!    request at 23:59:59.999 gets the old day's date *and* the old day's positions.
//! 2. **The day's secret** is a 128-bit value from the thread CSPRNG (ChaCha, OS-seeded). Every
//!    call sends a fresh one; the script stores it only when the day has none yet (the first
//!    request of the day wins, however many race) and returns the stored one to everybody.
//!    The day hash's one field is named by the secret and counts the positions taken, so a
//!    sandbox that remembers the secret sends it as a guess and the script's whole work is
//!    `TIME` + `HINCRBY` (a wrong guess is undone in the same script and answered with the
//!    real secret: correctness never depends on the sandbox's memory).
//! 3. **The permutation** ([`Permutation`](rules::Permutation)) runs in the function, not in Redis: a 10-round
//!    balanced Feistel network over `[0, a^2)` with `a = ceil(sqrt(9 * 10^(d-1)))`, round
//!    functions HMAC-SHA-1(secret, round, half) mod `a`, and cycle-walking back into
//!    `[0, 9 * 10^(d-1))`. Suffix = `10^(d-1) + permutation(position)`. A bijection, so distinct
//!    positions give distinct codes; the positions are distinct because the counter never
//!    wraps.
//!
//! # Why a keyed permutation, not the seed's pre-shuffled pool
//!
//! | | per-day pool (seed) | keyed Feistel permutation (this module) |
//! | --- | --- | --- |
//! | Redis memory per day | `9 * 10^(d-1)` entries: 270 KB (5 digits, 3 bytes each) to 27 MB (7 digits) | one hash of one field: 104 bytes (`MEMORY USAGE`), plus 72 bytes for the high-water mark |
//! | creating a day | a shuffle of up to 9,000,000 values uploaded by one request; racing first requests wait for it or duplicate it | one 16-byte secret stored by whichever first request runs first (`HSET` of a missing hash inside the script) |
//! | Redis work per call | a counter step and a `GETRANGE` of the batch's entries | `TIME` + `HINCRBY`, whatever the batch size |
//! | function work per code | none | 10 table lookups (about 0.3 µs per code including formatting); the tables, `10 * a` HMACs, are built once per day per sandbox (about 2 ms for 5 digits, 17 ms for 7) and take 12 KB (5 digits) to 120 KB (7) |
//! | order | a uniformly random permutation | a pseudo-random permutation keyed by a 128-bit secret |
//!
//! The Redis side stays as cheap as an `INCR` with a clock read, which is what bounds every
//! request; the permutation runs where CPU scales (the functions). NIST FF1 / FF3-1 would be
//! the standard format-preserving ciphers, but SP 800-38G Rev. 1 requires a domain of at least
//! 10^6 (the 5-digit domain is 90,000), so this is a plain Feistel network with FF1's 10 rounds
//! and a cryptographic round function. Observers see codes, never positions, so reading the
//! volume between two codes means recovering the day's 128-bit secret, which never leaves
//! Redis and the functions.
//!
//! # Time zone
//!
//! The function computes, from its own clock, the zone's UTC offset over a 12-hour window
//! around the start of the current hour (at least 5 hours either side of now) and the instants
//! where it changes ([`ZoneWindow`](rules::ZoneWindow), from the bundled IANA database (`domain::zone`), cached for the hour), plus the business
//! days that window touches, and passes them to the script with the keys of those days. The
//! script picks the offset for Redis `TIME`: the function's clock only chooses the candidates;
//! Redis `TIME` decides. A Redis clock outside the window (5 to 6 hours or more apart) is
//! refused ([`Error::Unavailable`](crate::store::Error::Unavailable)), never guessed.
//!
//! # Keys
//!
//! Every key carries the fixed hash tag `{oc}`, so the script can see the keys of two adjacent
//! days (around midnight) in one atomic call on a cluster.
//!
//! | key | type | contents |
//! | --- | --- | --- |
//! | `hb:{oc}:day:<yyyymmdd>` | hash | one field: the day's secret (32 hex digits) -> positions taken; no TTL: the start of a later day deletes it once it is older than yesterday ([`retired_days`]), so at most two exist |
//! | `hb:{oc}:quota:<yyyymmdd>:<user>` | string | codes the user took that day (`HONGBAO_ORDER_CODES_PER_USER_PER_DAY`); expires 2 days after the user's first code of the day. On `{oc}` so the quota is checked and counted in the script that takes the codes: a refused request writes nothing |
//! | `hb:{oc}:newest_day` | string | the newest business day (days since 1970-01-01) that got a day hash; no expiry |
//!
//! The high-water mark refuses to create a day hash for a day at or before it: a day hash that
//! vanished (evicted, deleted) or a Redis clock that went back by days would otherwise restart
//! a day's sequence and repeat its codes. Those requests fail ([`Error::Internal`](crate::store::Error::Internal), 500)
//! instead.
//!
//! # Errors and limits
//!
//! Codes are unique as long as Redis keeps its writes: a failover that loses the last
//! acknowledged `HINCRBY` (asynchronous replication) can hand out positions again, as it could
//! lose any other write. Day hashes and the high-water mark have no TTL, so no `volatile-*`
//! eviction policy can take them (an evicted day hash would stop the day); only the quota
//! counters have one, and an evicted counter lets its user take more codes that day, never a
//! code twice. Changing the zone or the width is safe at any time (a different width gives
//! codes of a different length; a zone change can at worst stop the day as above) but is
//! cleanest at a day boundary.
//!
//! # Files
//!
//! One folder per operation, its handler, store step and script side by side; the rules
//! beside them:
//!
//! * `next/`: `POST /order-codes`: `http.rs` (the body, the refusals, the answer), `store.rs`
//!   (`order_code.lua`'s call and the parsing of its reply), `order_code.lua`, `secrets.rs`
//!   (the day secrets a sandbox remembers) and `retire.rs` (deleting the day hashes a new day
//!   retires);
//! * [`rules`]: the settings, the business day and the day's permutation (no Redis, HTTP or
//!   Lambda type);
//! * [`keys`]: the keys.

pub mod keys;
pub mod next;
pub mod rules;

pub use keys::{day_key, newest_day_key, quota_key};
pub use next::store::{next_codes, next_codes_with};
pub use rules::{
    code_prefix, date_of_day, day_of_date, day_start, domain, new_day_secret, permutation,
    retired_days, window_of_hour, Outcome, MAX_BATCH, QUOTA_TTL_SECS,
};

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the next-order-code function.
pub fn routes() -> Routes {
    Routes::new().route(&next::http::OPERATION, routes!(next::http::next_codes))
}
