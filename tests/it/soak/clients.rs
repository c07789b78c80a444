//! The soak's clients: each draws its operations from the run's seed and sends them through the
//! functions' routers (API Gateway events, as Lambda receives them) on one of the sandboxes,
//! retrying as a real app does: a 5xx, or a request its sandbox was killed in the middle of,
//! is sent again with the same Idempotency-Key or reference after `Retry-After`. Every attempt
//! and every final answer goes into the history the checker judges.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hongbao::packets::{self, Share};
use hongbao::store::reclaim;
use hongbao::Store;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use hongbao::store::scripts::Call;

use super::Log;
use crate::common::{call, event, with_body, with_header, with_sub, Function};

/// The password of every password packet the soak creates.
pub const SOAK_PASSWORD: &str = "芝麻开门";

/// One operation a client sends.
#[derive(Debug, Clone)]
pub enum Op {
    /// `POST /wallet/deposits` (IAM).
    Deposit {
        user: String,
        cents: i64,
        reference: String,
    },
    /// `POST /wallet/withdrawals` (IAM).
    Withdraw {
        user: String,
        cents: i64,
        reference: String,
    },
    /// `POST /packets`, with an Idempotency-Key or without (then never retried: a retry could
    /// create a second packet, as the 503's message says).
    Create {
        sender: String,
        body: Value,
        key: Option<String>,
    },
    /// `POST /packets/{id}/grab`, with the body `{"password": SOAK_PASSWORD}` when
    /// `password` (every password packet of the soak has that one).
    Grab {
        packet: String,
        user: String,
        password: bool,
    },
    /// `POST /packets/{id}/cancel` by `user` (mostly the packet's sender).
    Cancel { packet: String, user: String },
    /// `POST /packets/{id}/claim`.
    Claim { packet: String, user: String },
    /// A claim whose sandbox stalls between step 1 (the claim read pending) and the credit, as
    /// a Lambda that is slow, but within its timeout; another request may finish the claim in
    /// between.
    SlowClaim {
        packet: String,
        user: String,
        stall_ms: u64,
    },
    /// A reclaim-cron run, killed after `killed_after_ms` when set.
    Reclaim { killed_after_ms: Option<u64> },
    /// `POST /order-codes` for `count` codes (a retry takes new codes: order codes are not
    /// idempotent, only unique).
    OrderCodes { user: String, count: u32 },
    /// `POST /campaigns/{id}/grab` (a retry over HTTP is a new press: with `per_user` 2 it may
    /// win a second code, never a third).
    CouponGrab { campaign: String, user: String },
    /// A grab call sent again after its reply was lost, another press of the user between
    /// (`soak/grab_again.rs`).
    CouponGrabAgain { campaign: String, user: String },
    /// `POST /coupons/redeem` (IAM) of `code` for `order`; with `resent`, the store's redeem
    /// under a call id of its own, sent again later (`soak/checkout.rs`).
    CouponRedeem {
        code: String,
        user: String,
        order: String,
        resent: Option<super::checkout::Resent>,
    },
    /// `POST /coupons/hold` (IAM) of `code` for `order`, `hold_secs` long; `resent` as a
    /// redeem's.
    CouponHold {
        code: String,
        user: String,
        order: String,
        hold_secs: u32,
        resent: Option<super::checkout::Resent>,
    },
    /// `POST /coupons/release` (IAM) of `order`'s hold or redemption of `code`; `resent` as a
    /// redeem's.
    CouponRelease {
        code: String,
        order: String,
        resent: Option<super::checkout::Resent>,
    },
    /// `POST /campaigns` (IAM) of a campaign that opens at once, created during the run
    /// (`soak/opening.rs`), retried with the same reference.
    CouponOpen { body: Value },
    /// A grab whose sandbox stalls between its reservation and its walk
    /// (`soak/opening.rs`), never sent again.
    CouponSlowGrab {
        campaign: String,
        user: String,
        stall_ms: u64,
    },
    /// `POST /merchants/{merchant}/deposits` (IAM), retried with the same reference.
    MerchantDeposit {
        merchant: String,
        cents: i64,
        reference: String,
    },
    /// `POST /merchant-packets` (IAM): an order's packet, retried with the same body.
    MerchantCreate { body: Value },
    /// `POST /campaigns/{id}/codes` (IAM): a batch of uploaded codes, retried with the same
    /// reference.
    CouponBatch {
        campaign: String,
        reference: String,
        codes: Vec<String>,
    },
}

impl Op {
    /// The kind, as the report counts it.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Deposit { .. } => "deposit",
            Op::Withdraw { .. } => "withdraw",
            Op::Create { key: Some(_), .. } => "create_keyed",
            Op::Create { key: None, .. } => "create_unkeyed",
            Op::Grab { .. } => "grab",
            Op::Cancel { .. } => "cancel",
            Op::Claim { .. } => "claim",
            Op::SlowClaim { .. } => "slow_claim",
            Op::Reclaim { .. } => "reclaim",
            Op::OrderCodes { .. } => "order_codes",
            Op::CouponGrab { .. } => "coupon_grab",
            Op::CouponGrabAgain { .. } => "coupon_grab_again",
            Op::CouponRedeem { resent: None, .. } => "coupon_redeem",
            Op::CouponHold { resent: None, .. } => "coupon_hold",
            Op::CouponRelease { resent: None, .. } => "coupon_release",
            Op::CouponRedeem { .. } => "coupon_redeem_resent",
            Op::CouponHold { .. } => "coupon_hold_resent",
            Op::CouponRelease { .. } => "coupon_release_resent",
            Op::CouponBatch { .. } => "coupon_batch",
            Op::CouponOpen { .. } => "coupon_open",
            Op::CouponSlowGrab { .. } => "coupon_slow_grab",
            Op::MerchantDeposit { .. } => "merchant_deposit",
            Op::MerchantCreate { .. } => "merchant_create",
        }
    }
}

/// One attempt: when it ended (ms since the run started) and its status (`None`: its sandbox
/// was killed before the answer).
#[derive(Debug, Clone)]
pub struct Attempt {
    #[allow(dead_code)] // printed (Debug) with a violation's operations
    pub at_ms: u64,
    pub status: Option<u16>,
    /// The answer's `error` code and `message`, if it had one.
    pub error: Option<(String, String)>,
}

/// An operation and everything it was answered.
#[derive(Debug, Clone)]
pub struct Record {
    pub client: usize,
    pub op: Op,
    pub attempts: Vec<Attempt>,
    /// The last definitive answer (a status below 500 and its body), if any.
    pub answer: Option<(u16, Value)>,
}

impl Record {
    /// Whether some attempt's outcome was unknown to the client (5xx or killed).
    pub fn ambiguous(&self) -> bool {
        self.attempts
            .iter()
            .any(|a| a.status.is_none_or(|s| s >= 500))
    }
}

/// What every client shares: the users, the packets created so far (id, sender), the history.
pub struct World {
    pub users: Vec<String>,
    pub packets: Mutex<Vec<(String, String)>>,
    /// Shares won so far (packet id, user), from grab answers: what claims mostly claim.
    pub wins: Mutex<Vec<(String, String)>>,
    pub history: Mutex<Vec<Record>>,
    pub started: Instant,
    /// The coupon campaigns open during the run.
    pub campaigns: Vec<String>,
    /// Coupons won so far (code, user), from grab answers: what redeems mostly redeem.
    pub coupons: Mutex<Vec<(String, String)>>,
    /// The campaign that takes batches of codes, and until when (ms since the run started)
    /// clients send them.
    pub batches: Option<(String, u64)>,
    /// Coupons held or redeemed so far (code, order), from checkout answers: what releases
    /// mostly release.
    pub checkouts: Mutex<Vec<(String, String)>>,
    /// The uploaded campaigns that give a user more than one code: where grab calls are sent
    /// again.
    pub grab_again: Vec<String>,
}

impl World {
    /// Milliseconds since the run started.
    pub fn ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

/// Client `id`: operations drawn from `seed` until `deadline`, on `sandboxes`.
pub async fn run(
    id: usize,
    seed: u64,
    deadline: Instant,
    sandboxes: Vec<Arc<Store>>,
    world: Arc<World>,
    log: Log,
) {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(1_000_003) ^ id as u64);
    let mut n = 0u64;
    while Instant::now() < deadline {
        n += 1;
        let store = sandboxes[rng.random_range(0..sandboxes.len())].clone();
        let ops = draw(&mut rng, &world, id, n);
        // Several ops drawn together run at once (a double press, a claim racing a slow one).
        let mut set = Vec::new();
        for op in ops {
            let killed = match &op {
                Op::Reclaim { killed_after_ms } => *killed_after_ms,
                op if super::coupons::abandoned(op) => Some(rng.random_range(1..15)),
                _ => rng.random_bool(0.04).then(|| rng.random_range(1..40)),
            };
            let (store, world, log) = (store.clone(), world.clone(), log.clone());
            set.push(tokio::spawn(async move {
                let record = perform(id, op, &store, killed, deadline, &world, &log).await;
                world.history.lock().unwrap().push(record);
            }));
        }
        for t in set {
            t.await.expect("a client operation panicked");
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..60))).await;
    }
}

/// The next operations of client `id` (its `n`th draw).
fn draw(rng: &mut StdRng, world: &World, id: usize, n: u64) -> Vec<Op> {
    let user = world.users.choose(rng).unwrap().clone();
    let recent: Vec<(String, String)> = {
        let p = world.packets.lock().unwrap();
        p.iter().rev().take(12).cloned().collect()
    };
    if let Some(ops) = super::coupons::draw(rng, world, id, n, &user) {
        return ops;
    }
    if let Some(ops) = super::merchants::draw(rng, id, n, &user) {
        return ops;
    }
    if rng.random_bool(0.04) {
        return vec![Op::OrderCodes {
            user,
            count: rng.random_range(1..=5),
        }];
    }
    let mut roll = rng.random_range(0..100);
    if recent.is_empty() && roll >= 42 {
        roll = 30; // nothing to grab yet: create
    }
    if roll < 18 {
        return vec![Op::Deposit {
            user,
            cents: rng.random_range(500..5_000),
            reference: format!("dep-{id}-{n}"),
        }];
    }
    if roll < 24 {
        return vec![Op::Withdraw {
            user,
            cents: rng.random_range(100..2_000),
            reference: format!("wd-{id}-{n}"),
        }];
    }
    if roll < 42 {
        let count = rng.random_range(1..=6u32);
        let total = i64::from(count) * rng.random_range(20..400);
        let mut body = json!({
            "total_cents": total,
            "count": count,
            "mode": if rng.random_bool(0.5) { "lucky" } else { "fixed" },
            "expires_in_secs": rng.random_range(3..8),
        });
        if rng.random_bool(0.2) {
            let mut to: Vec<String> = world
                .users
                .choose_multiple(rng, count as usize + 2)
                .cloned()
                .collect();
            to.retain(|u| *u != user);
            to.truncate(count as usize);
            if to.len() >= count as usize {
                body["recipients"] = json!(to);
            }
        }
        if rng.random_bool(0.2) {
            body["password"] = json!(SOAK_PASSWORD);
        }
        if body["mode"] == "fixed" {
            body["total_cents"] = json!(i64::from(count) * (total / i64::from(count)));
        }
        super::draws::maybe_draw(rng, &mut body);
        let key = rng.random_bool(0.6).then(|| format!("ck-{id}-{n}"));
        return vec![Op::Create {
            sender: user,
            body,
            key,
        }];
    }
    let (packet, sender) = recent.choose(rng).unwrap().clone();
    if roll < 45 {
        // The sender cancels, racing the grabs and claims of the packet (now and then someone
        // else: 403).
        let user = if rng.random_bool(0.9) { sender } else { user };
        return vec![Op::Cancel { packet, user }];
    }
    if roll < 70 {
        let grab = Op::Grab {
            packet: packet.clone(),
            user: user.clone(),
            password: rng.random_bool(0.8),
        };
        let mut ops = vec![grab.clone()];
        if rng.random_bool(0.3) {
            ops.push(grab); // a double press
        }
        return ops;
    }
    if roll < 95 {
        let (packet, user) = {
            let wins = world.wins.lock().unwrap();
            match wins.iter().rev().take(30).collect::<Vec<_>>().choose(rng) {
                Some(w) if rng.random_bool(0.8) => (*w).clone(),
                _ => (packet, user),
            }
        };
        let claim = Op::Claim {
            packet: packet.clone(),
            user: user.clone(),
        };
        if rng.random_bool(0.3) {
            let stall_ms = rng.random_range(300..2_500);
            return vec![
                Op::SlowClaim {
                    packet,
                    user,
                    stall_ms,
                },
                claim,
            ];
        }
        return vec![claim];
    }
    vec![Op::Reclaim {
        killed_after_ms: rng.random_bool(0.4).then(|| rng.random_range(2..60)),
    }]
}

/// Sends `op` until a definitive answer (or, without one, until `deadline`): the first attempt
/// killed after `killed_after_ms` when set, a 5xx retried after `Retry-After`.
pub(super) async fn perform(
    client: usize,
    op: Op,
    store: &Arc<Store>,
    killed_after_ms: Option<u64>,
    deadline: Instant,
    world: &World,
    log: &Log,
) -> Record {
    let mut record = Record {
        client,
        op: op.clone(),
        attempts: Vec::new(),
        answer: None,
    };
    let mut kill = killed_after_ms;
    loop {
        let sent = attempt(&op, store);
        let result = match kill.take() {
            Some(ms) => tokio::time::timeout(Duration::from_millis(ms), sent)
                .await
                .ok(),
            None => Some(sent.await),
        };
        let at_ms = world.ms();
        match result {
            None => {
                record.attempts.push(Attempt {
                    at_ms,
                    status: None,
                    error: None,
                });
                log.note(format!("client {client} killed in {} {op:?}", op.kind()));
                if super::coupons::abandoned(&op) {
                    return record;
                }
            }
            Some((status, body, retry_after)) => {
                record.attempts.push(Attempt {
                    at_ms,
                    status: Some(status),
                    error: body["error"].as_str().map(|code| {
                        let message = body["message"].as_str().unwrap_or_default();
                        (code.to_string(), message.to_string())
                    }),
                });
                // `exhausted` (no code left today) is a 503 that is an answer: none taken, and its
                // Retry-After is the next business day.
                let exhausted = matches!(op, Op::OrderCodes { .. }) && body["error"] == "exhausted";
                if status < 500 || exhausted {
                    super::merchants::note_packet(world, &op, status, &body);
                    if let (Op::Create { sender, .. }, 201) = (&op, status) {
                        let id = body["packet_id"].as_str().unwrap_or_default().to_string();
                        world.packets.lock().unwrap().push((id, sender.clone()));
                    }
                    if let (
                        Op::CouponHold { code, order, .. } | Op::CouponRedeem { code, order, .. },
                        200,
                    ) = (&op, status)
                    {
                        world
                            .checkouts
                            .lock()
                            .unwrap()
                            .push((code.clone(), order.clone()));
                    }
                    // A coupon won: from a campaign's grab, or a coupon packet's claim.
                    let code = match (&op, status) {
                        (Op::CouponGrab { user, .. }, 200) => Some((&body["code"], user)),
                        (Op::Claim { user, .. }, 200) => Some((&body["coupon"]["code"], user)),
                        _ => None,
                    };
                    if let Some((Value::String(code), user)) = code {
                        world
                            .coupons
                            .lock()
                            .unwrap()
                            .push((code.clone(), user.clone()));
                    }
                    if let (Op::Grab { packet, user, .. }, 200) = (&op, status) {
                        world
                            .wins
                            .lock()
                            .unwrap()
                            .push((packet.clone(), user.clone()));
                    }
                    record.answer = Some((status, body));
                    return record;
                }
                let wait = retry_after.and_then(|r| r.parse().ok()).unwrap_or(1u64);
                tokio::time::sleep(Duration::from_secs(wait)).await;
            }
        }
        // An unkeyed create is never sent twice (its retry could create a second packet).
        if matches!(op, Op::Create { key: None, .. }) || Instant::now() >= deadline {
            return record;
        }
    }
}

/// One attempt of `op` through its function's router: (status, body, Retry-After).
pub async fn attempt(op: &Op, store: &Arc<Store>) -> (u16, Value, Option<String>) {
    match op {
        Op::Deposit {
            user,
            cents,
            reference,
        } => {
            let body = json!({"user_id": user, "amount_cents": cents, "reference": reference});
            call(
                store,
                Function::Wallet,
                &with_body(event("wallet-deposit"), &body.to_string()),
            )
            .await
        }
        Op::Withdraw {
            user,
            cents,
            reference,
        } => {
            let body = json!({"user_id": user, "amount_cents": cents, "reference": reference});
            let ev = with_body(event("wallet-withdrawal"), &body.to_string());
            call(store, Function::Wallet, &ev).await
        }
        Op::Create { sender, body, key } => {
            let mut ev = with_sub(
                with_body(event("create-packet-lucky"), &body.to_string()),
                sender,
            );
            if let Some(k) = key {
                ev = with_header(ev, "idempotency-key", k);
            }
            call(store, Function::CreatePacket, &ev).await
        }
        Op::Grab {
            packet,
            user,
            password,
        } => {
            let mut ev = with_sub(on_packet(event("grab-grab"), packet), user);
            if *password {
                ev = with_body(ev, &json!({ "password": SOAK_PASSWORD }).to_string());
            }
            call(store, Function::Grab, &ev).await
        }
        Op::Cancel { packet, user } => {
            let mut ev = with_sub(on_packet(event("create-packet-cancel"), packet), user);
            ev["body"] = Value::Null;
            call(store, Function::CreatePacket, &ev).await
        }
        Op::Claim { packet, user } => {
            call(
                store,
                Function::Claim,
                &with_sub(on_packet(event("claim-claim"), packet), user),
            )
            .await
        }
        Op::SlowClaim {
            packet,
            user,
            stall_ms,
        } => slow_claim(store, packet, user, *stall_ms).await,
        Op::OrderCodes { user, count } => {
            let ev = with_sub(
                with_body(
                    event("next-order-code-batch"),
                    &json!({ "count": count }).to_string(),
                ),
                user,
            );
            call(store, Function::NextOrderCode, &ev).await
        }
        Op::CouponGrab { campaign, user } => {
            let mut ev = with_sub(event("coupon-grab"), user);
            let path = format!("/campaigns/{campaign}/grab");
            ev["rawPath"] = json!(path);
            ev["requestContext"]["http"]["path"] = json!(path);
            ev["pathParameters"]["id"] = json!(campaign);
            call(store, Function::Coupon, &ev).await
        }
        Op::CouponRedeem {
            resent: Some(r), ..
        }
        | Op::CouponHold {
            resent: Some(r), ..
        }
        | Op::CouponRelease {
            resent: Some(r), ..
        } => super::checkout::send_resent(store, op, r).await,
        Op::CouponRedeem {
            code, user, order, ..
        } => {
            let body = json!({"code": code, "user_id": user, "order_reference": order});
            let ev = with_body(event("coupon-redeem"), &body.to_string());
            call(store, Function::Coupon, &ev).await
        }
        Op::CouponGrabAgain { campaign, user } => {
            super::grab_again::send(store, campaign, user).await
        }
        Op::CouponHold {
            code,
            user,
            order,
            hold_secs,
            ..
        } => super::checkout::send_hold(store, code, user, order, *hold_secs).await,
        Op::CouponRelease { code, order, .. } => {
            super::checkout::send_release(store, code, order).await
        }
        Op::CouponBatch {
            campaign,
            reference,
            codes,
        } => super::coupons::send_batch(store, campaign, reference, codes).await,
        Op::CouponOpen { body } => super::opening::send_create(store, body).await,
        Op::MerchantDeposit {
            merchant,
            cents,
            reference,
        } => {
            let ev = super::merchants::deposit_event(merchant, *cents, reference);
            call(store, Function::Merchant, &ev).await
        }
        Op::MerchantCreate { body } => {
            call(
                store,
                Function::Merchant,
                &super::merchants::create_event(body),
            )
            .await
        }
        Op::CouponSlowGrab {
            campaign,
            user,
            stall_ms,
        } => super::opening::slow_grab(store, campaign, user, *stall_ms).await,
        Op::Reclaim { .. } => match reclaim::run(store).await {
            Ok(s) => (200, json!({"settled": s.settled, "failed": s.failed}), None),
            Err(e) => (503, json!({"error": e.to_string()}), Some("1".into())),
        },
    }
}

/// Claim step 1, a stall, then steps 2-4 (`packets::redrive_claim`), as a sandbox that was slow
/// between them (a coupon packet's claim, one step, is sent as a plain claim). Answers 200 when it credited or found the claim done, 404 when there was no
/// share to claim, 503 when Redis failed (the claim then stays pending for the next re-drive).
async fn slow_claim(
    store: &Arc<Store>,
    packet: &str,
    user: &str,
    stall_ms: u64,
) -> (u16, Value, Option<String>) {
    let step1 = {
        let pk = hongbao::store::keys::Keys::new(&store.config().key_prefix).packet(packet);
        let conn = store.conn().await;
        match conn {
            Err(e) => return (503, json!({"error": e.to_string()}), Some("1".into())),
            Ok(mut conn) => {
                let reply: redis::RedisResult<redis::Value> = hongbao::store::scripts::ClaimCall {
                    meta: &pk.meta,
                    grabs: &pk.grabs,
                    claims: &pk.claims,
                    coupons: &pk.coupons,
                    books: &pk.meta,
                    journal: &pk.meta,
                    user_id: user,
                    books_of: "",
                    call: "",
                }
                .invocation()
                .invoke_async(&mut conn)
                .await;
                match reply.map(|r| hongbao::store::scripts::texts("claim", r)) {
                    Ok(Ok(t)) => t,
                    Ok(Err(e)) => return (500, json!({"error": e.to_string()}), None),
                    Err(e) => return (503, json!({"error": e.to_string()}), Some("1".into())),
                }
            }
        }
    };
    // A coupon packet's claim is one script (its first run learns the merchant's books and
    // writes nothing): no steps to stall between, so it is sent as a plain claim.
    if step1.first().map(String::as_str) == Some("books") {
        let ev = with_sub(on_packet(event("claim-claim"), packet), user);
        return call(store, Function::Claim, &ev).await;
    }
    if step1.first().map(String::as_str) != Some("claimed") {
        return (404, json!({"step1": step1}), None);
    }
    let Some(claimed_at) = step1[2].strip_prefix("pending:") else {
        return (200, json!({"already": step1[2]}), None);
    };
    tokio::time::sleep(Duration::from_millis(stall_ms)).await;
    let share = Share::parse(&step1[1]).expect("share record");
    let claimed_at_ms: i64 = claimed_at.parse().expect("claimed_at");
    let merchant = step1.get(4).filter(|m| !m.is_empty()).map(String::as_str);
    let claimed = packets::ClaimedPacket {
        packet_id: packet,
        sender_id: &step1[3],
        merchant_id: merchant,
    };
    let call = format!("{:016x}", rand::random::<u64>());
    match packets::redrive_claim(store, claimed, user, &share, claimed_at_ms, false, &call).await {
        Ok(c) => (
            200,
            json!({"applied": c.applied, "amount_cents": share.amount_cents}),
            None,
        ),
        Err(hongbao::store::Error::Unavailable(e)) => (503, json!({"error": e}), Some("1".into())),
        Err(e) => (500, json!({"error": e.to_string()}), None),
    }
}

/// The event with the `PACKET_ID` placeholder replaced by `id`.
fn on_packet(v: Value, id: &str) -> Value {
    serde_json::from_str(&v.to_string().replace("PACKET_ID", id)).unwrap()
}
