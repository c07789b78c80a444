//! The checker: judges the history (what the clients sent and were answered) against the
//! store's final state, read directly from every master, never against the code's own claims.

use std::collections::{BTreeMap, BTreeSet};

use hongbao::domain::journal::Kind;
use hongbao::store::journal::{self, Entry};
use hongbao::store::keys::Keys;
use hongbao::wallet;
use hongbao::Store;
use serde_json::Value;

use super::clients::{Op, Record};

/// Everything the checks read, gathered after the system quiesced.
pub struct Final {
    /// Every packet meta hash in the cluster (SCAN of every master): id -> fields.
    pub packets: BTreeMap<String, BTreeMap<String, String>>,
    /// Every packet's grabs hash: id -> user -> share record.
    pub grabs: BTreeMap<String, BTreeMap<String, String>>,
    /// Every packet's claims hash: id -> user -> state.
    pub claims: BTreeMap<String, BTreeMap<String, String>>,
    /// Every draw packet's entrants (`<ticket>:<user>`, in ticket order): id -> members.
    pub tickets: BTreeMap<String, Vec<String>>,
    /// Every user's balance, cents.
    pub balances: BTreeMap<String, i64>,
    /// Every merchant's books (the merchant's hash: `balance`, `reserved`, ...).
    pub merchants: BTreeMap<String, BTreeMap<String, String>>,
    /// Every journal entry of the users' and the merchants' hash tags.
    pub journal: Vec<Entry>,
}

impl Final {
    /// Every user's balance and every merchant budget's, by owner: what each owner's events on
    /// the feed must add up to.
    pub fn accounts(&self) -> BTreeMap<String, i64> {
        let mut all = self.balances.clone();
        for (m, fields) in &self.merchants {
            let balance = fields
                .get("balance")
                .and_then(|b| b.parse().ok())
                .unwrap_or(0);
            all.insert(m.clone(), balance);
        }
        all
    }
}

/// Reads [`Final`] through `store` and raw connections to the `masters` (real ports).
pub async fn gather(store: &Store, masters: &[u16], users: &[String]) -> Final {
    let keys = Keys::new(&store.config().key_prefix);
    let mut packets = BTreeMap::new();
    let (mut grabs, mut claims, mut tickets) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for &port in masters {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let mut cursor = 0u64;
        loop {
            let (next, found): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("*:packet:*")
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .unwrap();
            for key in found {
                let id = key.rsplit(":packet:").next().unwrap().to_string();
                if id.contains(':') {
                    continue;
                }
                let pk = keys.packet(&id);
                let meta: BTreeMap<String, String> = redis::cmd("HGETALL")
                    .arg(&pk.meta)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let g: BTreeMap<String, String> = redis::cmd("HGETALL")
                    .arg(&pk.grabs)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let c: BTreeMap<String, String> = redis::cmd("HGETALL")
                    .arg(&pk.claims)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                if meta.contains_key("draw_at") {
                    let t: Vec<String> = redis::cmd("ZRANGE")
                        .arg(&pk.tickets)
                        .arg(0)
                        .arg(-1)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    tickets.insert(id.clone(), t);
                }
                packets.insert(id.clone(), meta);
                grabs.insert(id.clone(), g);
                claims.insert(id, c);
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
    }
    let mut balances = BTreeMap::new();
    let mut journal_keys = BTreeSet::new();
    for u in users {
        balances.insert(u.clone(), wallet::balance(store, u).await.unwrap());
        journal_keys.insert(keys.wallet(u).journal);
    }
    let mut merchants = BTreeMap::new();
    for m in super::merchants::MERCHANTS {
        let mk = keys.merchant(m);
        let mut conn = store.conn().await.unwrap();
        let fields: BTreeMap<String, String> = redis::cmd("HGETALL")
            .arg(&mk.merchant)
            .query_async(&mut conn)
            .await
            .unwrap();
        merchants.insert(m.to_string(), fields);
        journal_keys.insert(mk.journal);
    }
    let mut journal = Vec::new();
    for k in journal_keys {
        journal.extend(journal::read(store, &k, 1_000_000).await.unwrap());
    }
    Final {
        packets,
        grabs,
        claims,
        tickets,
        balances,
        merchants,
        journal,
    }
}

/// Checks the history against the final state; returns the violations (empty: none), each
/// naming the ids it is about.
pub fn check(history: &[Record], f: &Final) -> Vec<String> {
    let mut v = Vec::new();
    let entries = journaled_once(f, &mut v);
    let (deposited, withdrawn) = deposits_and_withdrawals(history, &entries, &mut v);
    let wallets: i64 = f.balances.values().sum();
    let held = packets_settled_and_claims_credited(f, &entries, &mut v);
    let all_settled = f.packets.values().all(|m| {
        m.get("status").map(String::as_str) == Some("settled")
            && (!m.contains_key("redeem_by") || m.contains_key("coupons_settled_at"))
    });
    let (merchant_deposited, budgets) =
        super::merchants::check(history, &f.merchants, &f.journal, all_settled, &mut v);
    let deposited = deposited + merchant_deposited;
    if deposited - withdrawn != wallets + budgets + held {
        v.push(format!("money not conserved: deposits {deposited} - withdrawals {withdrawn} != wallets {wallets} + merchant budgets and coupons {budgets} + held in packets {held} (off by {})", wallets + budgets + held - (deposited - withdrawn)));
    }
    acknowledged_are_durable(history, f, &entries, &mut v);
    super::draws::check(history, f, &mut v);
    order_codes_once(history, &mut v);
    v
}

/// The journal's entries by (kind, user, reference).
type Entries<'a> = BTreeMap<(Kind, String, String), Vec<&'a Entry>>;

/// How many entries of kind `k` the journal holds for `user` and `reference`.
fn count(entries: &Entries, k: Kind, user: &str, reference: &str) -> usize {
    entries
        .get(&(k, user.to_string(), reference.to_string()))
        .map_or(0, Vec::len)
}

/// Indexes the journal; no balance ever negative, and money moved once per movement.
fn journaled_once<'a>(f: &'a Final, v: &mut Vec<String>) -> Entries<'a> {
    let mut entries = Entries::new();
    for e in &f.journal {
        entries
            .entry((e.kind, e.user_id.clone(), e.reference.clone()))
            .or_default()
            .push(e);
        if e.balance_cents < 0 {
            v.push(format!(
                "negative balance: {} at {} after {:?} {}",
                e.user_id, e.balance_cents, e.kind, e.reference
            ));
        }
    }
    // Money moved once per movement: no journal entry twice (a cancelled packet's sender gets
    // two refunds: the un-grabbed shares at the cancel, the unclaimed grabbed ones at
    // settlement). A coupon is redeemed again after its redemption was released: its
    // redemptions and releases are judged in order by `checkout::redemptions`.
    for ((k, user, reference), list) in &entries {
        if matches!(k, Kind::CouponRedeemed | Kind::CouponReleased) {
            continue;
        }
        let cancelled = entries
            .get(&(Kind::PacketCancelled, user.clone(), reference.clone()))
            .map_or(0, Vec::len);
        let allowed = if *k == Kind::RefundCredit && cancelled == 1 {
            2
        } else {
            1
        };
        if list.len() > allowed {
            v.push(format!(
                "{k:?} of {user} for {reference} journaled {} times (paid twice)",
                list.len()
            ));
        }
    }
    entries
}

/// Deposits and withdrawals: the acknowledged ones moved money exactly once; the total
/// expected comes from the acknowledged answers, and for those whose every attempt was
/// ambiguous from the journal. Returns (deposited, withdrawn), cents.
fn deposits_and_withdrawals(
    history: &[Record],
    entries: &Entries,
    v: &mut Vec<String>,
) -> (i64, i64) {
    let count = |k: Kind, user: &str, reference: &str| count(entries, k, user, reference);
    let (mut deposited, mut withdrawn) = (0i64, 0i64);
    for r in history {
        match (&r.op, &r.answer) {
            (
                Op::Deposit {
                    user,
                    cents,
                    reference,
                },
                Some((201, _)),
            ) => {
                deposited += cents;
                if count(Kind::Deposit, user, reference) != 1 {
                    v.push(format!(
                        "acknowledged deposit {reference} of {user} not journaled once"
                    ));
                }
            }
            (
                Op::Withdraw {
                    user,
                    cents,
                    reference,
                },
                Some((201, _)),
            ) => {
                withdrawn += cents;
                if count(Kind::Withdrawal, user, reference) != 1 {
                    v.push(format!(
                        "acknowledged withdrawal {reference} of {user} not journaled once"
                    ));
                }
            }
            (
                Op::Withdraw {
                    user, reference, ..
                },
                Some((s, _)),
            ) if count(Kind::Withdrawal, user, reference) > 0 => {
                v.push(format!(
                    "withdrawal {reference} of {user} answered {s} but paid out"
                ));
            }
            _ => {}
        }
    }
    // Deposits whose every attempt was ambiguous may or may not have landed: the journal says.
    for r in history {
        if let (
            Op::Deposit {
                user,
                cents,
                reference,
            },
            None,
        ) = (&r.op, &r.answer)
        {
            deposited += cents * count(Kind::Deposit, user, reference) as i64;
        }
        if let (
            Op::Withdraw {
                user,
                cents,
                reference,
            },
            None,
        ) = (&r.op, &r.answer)
        {
            withdrawn += cents * count(Kind::Withdrawal, user, reference) as i64;
        }
    }
    (deposited, withdrawn)
}

/// Every packet expired and settled, debited once, its shares one per user, every claim
/// credited exactly once for its share, the rest refunded. Returns the cents packets still
/// hold.
fn packets_settled_and_claims_credited(f: &Final, entries: &Entries, v: &mut Vec<String>) -> i64 {
    let count = |k: Kind, user: &str, reference: &str| count(entries, k, user, reference);
    let mut held = 0i64;
    for (id, meta) in &f.packets {
        let n = |k: &str| meta.get(k).and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
        if meta.get("status").map(String::as_str) != Some("settled") {
            v.push(format!(
                "packet {id} expired but not settled (status {:?}, holding {} cents)",
                meta.get("status"),
                n("total_cents") - n("claimed_cents") - n("refunded_cents")
            ));
            held += n("total_cents") - n("claimed_cents") - n("refunded_cents");
        }
        // The payer: the sender, or a merchant packet's merchant (its own kinds of entry).
        let (sender, debit, refund) = match meta.get("merchant_id") {
            Some(m) => (m.clone(), Kind::MerchantPacketDebit, Kind::MerchantRefund),
            None => (
                meta.get("sender_id").cloned().unwrap_or_default(),
                Kind::PacketDebit,
                Kind::RefundCredit,
            ),
        };
        if count(debit, &sender, id) != 1 {
            v.push(format!(
                "packet {id} of {sender}: {} debits",
                count(debit, &sender, id)
            ));
        }
        // Shares: one per user, ids 1..=grabbed, within the total (nothing is evicted: the
        // nodes run noeviction, as the functions require).
        let g = &f.grabs[id];
        let mut ids: Vec<i64> = g
            .values()
            .map(|r| r.split(':').next().unwrap().parse().unwrap())
            .collect();
        ids.sort_unstable();
        if ids != (1..=ids.len() as i64).collect::<Vec<_>>()
            || ids.len() as i64 != n("grabbed_count")
            || n("grabbed_count") > n("count")
        {
            v.push(format!(
                "packet {id}: share ids {ids:?}, grabbed_count {}, count {}",
                n("grabbed_count"),
                n("count")
            ));
        }
        // Claims: every claim credited exactly once, for its share's amount (a coupon packet's
        // claim: one coupon issued, worth the share); refund = the rest.
        let credits = claim_credits(f, id, meta.contains_key("redeem_by"));
        let credited: i64 = credits.iter().map(|(_, a)| a).sum();
        for (user, record) in g {
            let amount: i64 = record.split(':').nth(1).unwrap().parse().unwrap();
            let mine: Vec<i64> = credits
                .iter()
                .filter(|(u, _)| u == user)
                .map(|(_, a)| *a)
                .collect();
            let claimed = f.claims[id].contains_key(user);
            let ok = match mine.as_slice() {
                [] => !claimed,
                [a] => *a == amount && claimed,
                _ => false,
            };
            if !ok {
                v.push(format!(
                    "packet {id}: share of {user} claimed {claimed}, credited {} times",
                    mine.len()
                ));
            }
        }
        if credited != n("claimed_cents") {
            v.push(format!(
                "packet {id}: claims credited {credited} != claimed_cents {}",
                n("claimed_cents")
            ));
        }
        let refunds = entries
            .get(&(refund, sender.clone(), id.clone()))
            .map_or(0, |l| l.iter().map(|e| e.amount_cents).sum::<i64>());
        if meta.get("status").map(String::as_str) == Some("settled")
            && refunds != n("total_cents") - n("claimed_cents")
        {
            v.push(format!(
                "packet {id}: refunded {refunds}, owed {}",
                n("total_cents") - n("claimed_cents")
            ));
        }
        if meta.contains_key("redeem_by") {
            coupons_settled(id, meta, &sender, entries, v);
        }
    }
    held
}

/// The claims of packet `id` the journal credited: (user, cents), from `claim_credit` entries,
/// or for a packet paid out as coupons (`coupons`) from its `coupon_issued` entries (reference
/// `<packet_id>/<share_id>`, worth the share).
fn claim_credits(f: &Final, id: &str, coupons: bool) -> Vec<(String, i64)> {
    f.journal
        .iter()
        .filter_map(|e| match (&e.share_coupon, e.kind) {
            (None, Kind::ClaimCredit) if !coupons && e.reference == id => {
                Some((e.user_id.clone(), e.amount_cents))
            }
            (Some(s), Kind::CouponIssued)
                if coupons && e.reference.split('/').next() == Some(id) =>
            {
                Some((e.user_id.clone(), s.amount_off_cents))
            }
            _ => None,
        })
        .collect()
}

/// A coupon packet after the quiesce (every `redeem_by` has passed): its coupons settled, none
/// left open, and what its merchant got back for them (`merchant_coupon_refund`: the coupons
/// never redeemed, and each redemption released after that) = its `coupon_refunded_cents`.
fn coupons_settled(
    id: &str,
    meta: &BTreeMap<String, String>,
    merchant: &str,
    entries: &Entries,
    v: &mut Vec<String>,
) {
    let n = |k: &str| meta.get(k).and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
    if !meta.contains_key("coupons_settled_at") || n("coupon_open_cents") != 0 {
        v.push(format!(
            "packet {id}: coupons not settled after redeem_by ({} cents open)",
            n("coupon_open_cents")
        ));
    }
    let refunded: i64 = entries
        .iter()
        .filter(|((k, who, reference), _)| {
            *k == Kind::MerchantCouponRefund
                && who == merchant
                && reference.split('/').next() == Some(id)
        })
        .flat_map(|(_, list)| list.iter().map(|e| e.amount_cents))
        .sum();
    if refunded != n("coupon_refunded_cents") {
        v.push(format!(
            "packet {id}: coupons refunded {refunded} by the journal, {} by the packet",
            n("coupon_refunded_cents")
        ));
    }
}

/// Acknowledged creates, cancels, grabs and claims are durable and agree with the state.
fn acknowledged_are_durable(history: &[Record], f: &Final, entries: &Entries, v: &mut Vec<String>) {
    let count = |k: Kind, user: &str, reference: &str| count(entries, k, user, reference);
    for r in history {
        match (&r.op, &r.answer) {
            (Op::Create { .. }, Some((201, b))) => {
                let id = b["packet_id"].as_str().unwrap_or_default();
                if !f.packets.contains_key(id) {
                    v.push(format!("acknowledged packet {id} does not exist"));
                }
            }
            (Op::Cancel { packet, user }, Some((200, b))) => {
                let cancels = entries
                    .get(&(Kind::PacketCancelled, user.clone(), packet.clone()))
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                match cancels {
                    [e] if e.refunded_cents == b["refunded_cents"].as_i64() => {}
                    _ => v.push(format!(
                        "acknowledged cancel of {packet} by {user} (refunded {}) journaled as {cancels:?}",
                        b["refunded_cents"]
                    )),
                }
            }
            (Op::Cancel { packet, user }, Some((s, _)))
                if *s != 200
                    && count(Kind::PacketCancelled, user, packet) > 0
                    && !r.ambiguous() =>
            {
                v.push(format!(
                    "cancel of {packet} by {user} answered {s} but cancelled it"
                ));
            }
            (Op::Grab { packet, user, .. }, Some((s @ (200 | 409), b))) => {
                let share = if *s == 200 { b } else { &b["share"] };
                let Some(g) = f.grabs.get(packet) else {
                    v.push(format!(
                        "grab of {packet} by {user} answered {s}: no grabs hash"
                    ));
                    continue;
                };
                if share["share_id"].is_null() {
                    continue;
                }
                let held = g.get(user);
                let id = share["share_id"].as_i64().unwrap_or(-1);
                if held.and_then(|r| r.split(':').next()?.parse::<i64>().ok()) != Some(id) {
                    v.push(format!(
                        "grab of {packet} by {user} answered share {id}, the packet holds {held:?}"
                    ));
                }
            }
            (Op::Claim { packet, user }, Some((200, b))) => {
                // A coupon's code is `<packet_id>.<share_id>`, its issue's reference
                // `<packet_id>/<share_id>`.
                let n = match b["coupon"]["code"].as_str() {
                    Some(code) => count(Kind::CouponIssued, user, &code.replacen('.', "/", 1)),
                    None => count(Kind::ClaimCredit, user, packet),
                };
                if n != 1 {
                    v.push(format!(
                        "acknowledged claim of {packet} by {user} credited {n} times"
                    ));
                }
            }
            _ => {}
        }
    }
}

/// Order codes: every code answered is 11 digits, `yyMMdd` of its business day, and no code
/// was handed out twice, whatever was re-sent.
fn order_codes_once(history: &[Record], v: &mut Vec<String>) {
    let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
    for r in history {
        if let (Op::OrderCodes { count, .. }, Some((201, b))) = (&r.op, &r.answer) {
            let day = b["date"].as_str().unwrap_or_default().replace('-', "");
            let list = b["codes"].as_array().map(Vec::as_slice).unwrap_or_default();
            if list.len() != *count as usize {
                v.push(format!(
                    "order codes: {} answered for a count of {count}",
                    list.len()
                ));
            }
            for c in list {
                let c = c.as_str().unwrap_or_default();
                let ok = c.len() == 11
                    && c.bytes().all(|b| b.is_ascii_digit())
                    && day.len() == 8
                    && c.starts_with(&day[2..]);
                if !ok {
                    v.push(format!(
                        "order code {c:?} is not yyMMdd + 5 digits of {day}"
                    ));
                }
                *codes.entry(c).or_default() += 1;
            }
        }
    }
    for (c, n) in codes {
        if n > 1 {
            v.push(format!("order code {c} handed out {n} times"));
        }
    }
}

/// The ids a violation names (packet ids and user ids), to pick the log lines around it.
pub fn ids_in(violation: &str, users: &[String]) -> Vec<String> {
    let mut ids: Vec<String> = violation
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
        .filter(|w| w.len() == 24 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect();
    ids.extend(
        users
            .iter()
            .filter(|u| violation.contains(u.as_str()))
            .cloned(),
    );
    ids
}

/// A JSON value's `error` code, for the report.
pub fn code(b: &Value) -> &str {
    b["error"].as_str().unwrap_or("ok")
}
