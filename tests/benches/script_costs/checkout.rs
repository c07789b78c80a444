//! The checkout rows: `coupon_hold.lua` (a new hold), `coupon_redeem.lua` (committing
//! the order's hold, and redeeming directly), `coupon_release.lua` (a redemption reversed),
//! each beside the bare redemption of seed 004's kind of checkout: read the coupon's record and
//! write it back with the order (`HGET`, `HSET`), as bench-only Lua, on the same server.

use hongbao::coupons::rules::{campaign_no, CodeSource, NewCampaign};
use hongbao::coupons::{self, CampaignCreateOutcome, PoolKeys};
use hongbao::store::scripts::{self, Call, CouponHoldCall, CouponRedeemCall, CouponReleaseCall};
use hongbao::Store;
use redis::Script;

use super::{Bench, Row};

/// The bare redemption: the record read, then written back with the order appended. KEYS[1]
/// the issued hash, ARGV[1] the code, ARGV[2] the order.
pub const BARE_REDEEM: &str = r#"
local r = redis.call('HGET', KEYS[1], ARGV[1])
if not r then
  return 'not_found'
end
redis.call('HSET', KEYS[1], ARGV[1], r .. '\n' .. ARGV[2])
return 'redeemed'
"#;

/// A campaign of `n` generated codes (one pool), each issued to user `u<i>` by writing the
/// record a grab writes; its id and pool keys.
async fn issued_campaign(b: &mut Bench, store: &Store, n: usize) -> (String, PoolKeys) {
    let (secs, _): (i64, i64) = b.cmd(&["TIME"]).await;
    let now = secs * 1000;
    let req = NewCampaign {
        starts_at_ms: Some(now - 1_000),
        redeem_by_ms: now + 7_200_000,
        ..NewCampaign::new(
            "bench checkout",
            CodeSource::Generated(n as u64),
            now + 3_600_000,
            format!("bench-checkout-{now}"),
        )
    };
    let Ok(CampaignCreateOutcome::Created(c)) = coupons::create(store, &req).await else {
        panic!("the bench's campaign")
    };
    let no = campaign_no(&c.campaign_id).expect("id");
    let keys = PoolKeys::new(&store.config().key_prefix, &c.campaign_id, no, 0, 1);
    for chunk in (0..n).collect::<Vec<_>>().chunks(1_000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.cmd("HSET")
                .arg(&keys.issued)
                .arg(i.to_string())
                .arg(format!("u{i}\n{now}"))
                .ignore();
        }
        let _: () = pipe.query_async(&mut b.conn).await.expect("issued records");
    }
    (c.campaign_id, keys)
}

/// The key of call `call`'s answer on the pool of issued hash `issued` (borrowed by the
/// script calls for the whole run).
fn answer_key(issued: &str, call: &str) -> &'static str {
    Box::leak(hongbao::store::keys::Keys::call_answer(issued, call).into_boxed_str())
}

/// Checkout paths of `coupon_hold.lua`, `coupon_redeem.lua` and
/// `coupon_release.lua`, beside the bare redemption.
pub async fn checkout_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    let n = b.calls;
    let (id, keys) = issued_campaign(b, store, n).await;
    let codes: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let users: Vec<String> = (0..n).map(|i| format!("u{i}")).collect();
    let call = |i: usize| format!("{i:016x}");
    let holds: Vec<_> = (0..n)
        .map(|i| {
            CouponHoldCall {
                pool: &keys.pool,
                issued: &keys.issued,
                call_answer: answer_key(&keys.issued, &call(i)),
                code: &codes[i],
                user_id: &users[i],
                order_reference: "order-1",
                hold_ms: 600_000,
                order_total_cents: "",
                discount_cents: "",
                call: &call(i),
                call_keep_ms: 86_400_000,
            }
            .texts()
        })
        .collect();
    let hold = b.phase("hold", &scripts::COUPON_HOLD, &holds, "held").await;
    let redeem = |order: &'static str, salt: usize| {
        (0..n)
            .map(|i| {
                CouponRedeemCall {
                    pool: &keys.pool,
                    issued: &keys.issued,
                    journal: &keys.journal,
                    books: &keys.pool,
                    grabs: &keys.pool,
                    call_answer: answer_key(&keys.issued, &call(salt + i)),
                    code: &codes[i],
                    user_id: &users[i],
                    order_reference: order,
                    campaign_id: &id,
                    order_total_cents: "",
                    discount_cents: "",
                    call: &call(salt + i),
                    share: "",
                    call_keep_ms: 86_400_000,
                }
                .texts()
            })
            .collect::<Vec<_>>()
    };
    let commits = redeem("order-1", n);
    let commit = b
        .phase(
            "redeem a hold",
            &scripts::COUPON_REDEEM,
            &commits,
            "redeemed",
        )
        .await;
    let releases: Vec<_> = (0..n)
        .map(|i| {
            CouponReleaseCall {
                pool: &keys.pool,
                issued: &keys.issued,
                journal: &keys.journal,
                books: &keys.pool,
                grabs: &keys.pool,
                ledger: &keys.pool,
                call_answer: answer_key(&keys.issued, &call(2 * n + i)),
                code: &codes[i],
                order_reference: "order-1",
                campaign_id: &id,
                call: &call(2 * n + i),
                share: "",
                ledger_cap: 100,
                call_keep_ms: 86_400_000,
            }
            .texts()
        })
        .collect();
    let release = b
        .phase(
            "release a redemption",
            &scripts::COUPON_RELEASE,
            &releases,
            "released",
        )
        .await;
    let directs = redeem("order-2", 3 * n);
    let direct = b
        .phase(
            "redeem directly",
            &scripts::COUPON_REDEEM,
            &directs,
            "redeemed",
        )
        .await;
    let bare = Script::new(BARE_REDEEM);
    let bares: Vec<_> = (0..n)
        .map(|i| {
            (
                vec![keys.issued.clone()],
                vec![codes[i].clone(), "order-3".into()],
            )
        })
        .collect();
    let bare_usec = b.phase("bare redeem", &bare, &bares, "redeemed").await;
    let row = |path, usec| Row {
        path,
        usec,
        baseline: "bare redemption (HGET, HSET)",
        baseline_usec: bare_usec,
        goal: f64::INFINITY,
    };
    vec![
        row("coupon hold: new", hold),
        row("coupon redeem: a hold committed", commit),
        row("coupon redeem: directly", direct),
        row("coupon release: a redemption", release),
    ]
}
