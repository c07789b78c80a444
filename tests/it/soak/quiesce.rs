//! After the faults: the system quiesces (ambiguous operations sent again, every packet
//! settled, every campaign closed) and the liveness probes run.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hongbao::store::reclaim;
use hongbao::Store;

use super::clients::{self, Op, Record};

/// Every ambiguous keyed operation of `history` sent again through `auditor` until it is
/// answered, each sending one more attempt of its record (a grab sent again is a press: the
/// checker counts it), stamped with the ms since the run `started`. Returns the history with
/// those answers, and how many were resolved per kind.
pub async fn resend_ambiguous(
    history: Vec<Record>,
    auditor: &Arc<Store>,
    started: Instant,
) -> (Vec<Record>, BTreeMap<&'static str, u64>) {
    let mut resolved = BTreeMap::<&str, u64>::new();
    let mut final_history = Vec::with_capacity(history.len());
    for mut r in history {
        let retry = r.answer.is_none()
            && !super::coupons::abandoned(&r.op)
            && !matches!(
                r.op,
                Op::Create { key: None, .. }
                    | Op::Reclaim { .. }
                    | Op::SlowClaim { .. }
                    | Op::CouponSlowGrab { .. }
                    | Op::OrderCodes { .. }
            );
        if retry {
            until_answered(&mut r, auditor, started).await;
            *resolved.entry(r.op.kind()).or_default() += 1;
        }
        final_history.push(r);
    }
    (final_history, resolved)
}

/// Waits until every packet has expired (a draw packet lives longest) and every coupon
/// packet's coupons are past `redeem_by`, then runs reclaim-cron until nothing is due, locked or stuck (a killed reclaim
/// run leaves its lock until the lock's TTL: runs are skipped until then). Returns the packets
/// settled.
pub async fn settle_every_packet(auditor: &Arc<Store>) -> u64 {
    let coupons = super::merchants::COUPON_SECS;
    let wait = (9 + coupons).max(super::draws::LIFE_SECS + 1);
    let last_expiry = Instant::now() + Duration::from_secs(wait);
    tokio::time::sleep_until(last_expiry.into()).await;
    let mut settled = 0;
    for _ in 0..120 {
        let s = reclaim::run(auditor).await.expect("reclaim after healing");
        settled += s.settled;
        let stuck = hongbao::store::audit::stuck_packets(auditor)
            .await
            .expect("stuck");
        if !s.skipped_locked && s.remaining_due == 0 && stuck.is_empty() && s.failed == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    settled
}

/// The campaigns have ended by now (3 s after the run): reclaim-cron's close, until all
/// `campaigns` are.
pub async fn close_campaigns(auditor: &Arc<Store>, campaigns: usize) {
    let mut closed = 0;
    for _ in 0..60 {
        let stop = Instant::now() + Duration::from_secs(20);
        match hongbao::coupons::close::close_ended(auditor, stop).await {
            Ok(c) => closed += c.closed,
            Err(e) => println!("soak: closing campaigns: {e}"),
        }
        if closed >= campaigns as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Liveness: once healed, every kind of operation succeeds within 10 s. (The order codes it
/// takes join `history`: the checker finds any of them handed out before.) Returns the
/// violations.
pub async fn liveness_probes(auditor: &Arc<Store>, history: &mut Vec<Record>) -> Vec<String> {
    let mut liveness = Vec::new();
    let probe_user = "u-live".to_string();
    for op in [
        Op::OrderCodes {
            user: probe_user.clone(),
            count: 3,
        },
        Op::Deposit {
            user: probe_user.clone(),
            cents: 500,
            reference: "live-dep".into(),
        },
        Op::Withdraw {
            user: probe_user.clone(),
            cents: 100,
            reference: "live-wd".into(),
        },
        Op::Create {
            sender: probe_user.clone(),
            body: serde_json::json!({"total_cents": 100, "count": 1, "expires_in_secs": 60}),
            key: Some("live-create".into()),
        },
    ] {
        let body = probe(&op, auditor, &mut liveness).await;
        if let Op::OrderCodes { .. } = op {
            history.push(clients::Record {
                client: usize::MAX,
                op: op.clone(),
                attempts: Vec::new(),
                answer: Some(body.clone()),
            });
        }
        if let (Op::Create { .. }, Some(id)) = (&op, body.1["packet_id"].as_str()) {
            for op in [
                Op::Grab {
                    packet: id.into(),
                    user: "u-live-2".into(),
                    password: true,
                },
                Op::Claim {
                    packet: id.into(),
                    user: "u-live-2".into(),
                },
            ] {
                probe(&op, auditor, &mut liveness).await;
            }
        }
    }
    liveness
}

/// Sends `op` until answered; a non-2xx answer, or one later than 10 s, is a violation noted
/// in `liveness`. Returns the answer.
async fn probe(
    op: &Op,
    auditor: &Arc<Store>,
    liveness: &mut Vec<String>,
) -> (u16, serde_json::Value) {
    let t = Instant::now();
    let mut r = Record {
        client: 0,
        op: op.clone(),
        attempts: Vec::new(),
        answer: None,
    };
    until_answered(&mut r, auditor, t).await;
    let (status, body) = r.answer.unwrap_or_default();
    if !(200..300).contains(&status) || t.elapsed() > Duration::from_secs(10) {
        liveness.push(format!(
            "liveness: {} answered {status} {body} after {:?}",
            op.kind(),
            t.elapsed()
        ));
    }
    (status, body)
}

/// Sends `r`'s operation through the healed system until it is answered below 500 (at most
/// 30 s), each attempt added to `r` (stamped with the ms since `started`), the last answer
/// its answer.
async fn until_answered(r: &mut Record, store: &Arc<Store>, started: Instant) {
    let t = Instant::now();
    loop {
        let (status, body, _) = clients::attempt(&r.op, store).await;
        r.attempts.push(clients::Attempt {
            at_ms: started.elapsed().as_millis() as u64,
            status: Some(status),
            error: body["error"].as_str().map(|code| {
                let message = body["message"].as_str().unwrap_or_default();
                (code.to_string(), message.to_string())
            }),
        });
        if status < 500 || t.elapsed() > Duration::from_secs(30) {
            r.answer = Some((status, body));
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
