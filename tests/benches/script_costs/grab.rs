//! The grab rows: `grab.lua`'s paths on a plain, a targeted, a password and a merchant
//! packet, beside the original red-packet blog post's grab (the merchant packet's win beside the
//! plain packet's) and the floor of a rate-limited repeat.

use crate::support::{lucky_packet, SEED_GRAB};
use hongbao::domain::split::Mode;
use hongbao::merchants;
use hongbao::merchants::rules::{MerchantPacketOutcome, MerchantPacketRequest};
use hongbao::packets;
use hongbao::packets::{CreateOutcome, NewPacket};
use hongbao::store::keys::Keys;
use hongbao::store::scripts;
use hongbao::store::scripts::{Call, GrabCall};
use hongbao::wallet;
use hongbao::Store;
use redis::Script;
use serde_json::json;

use crate::{strings, Bench, Row, JSON_OBJECT, LIMITED_REPEAT_FLOOR};

/// The grab phases' rate-limit window: an hour, so that no counter expires between the phases
/// of a round: the repeat phases then take the path they are named after.
pub const GRAB_WINDOW_MS: u64 = 3_600_000;

/// One `grab.lua` call by `user` on packet `packet_id`, as its keys and arguments: at most
/// `rate_limit` attempts per [`GRAB_WINDOW_MS`] (0: no limit), the verifier of the password sent
/// (empty for none), and its call id (as `packets::grab` sends one: a win records it, a repeat,
/// another call, compares it).
/// No guess budget: a wrong guess is limited by the user's rate limit alone.
pub fn grab_call(
    keys: &Keys,
    packet_id: &str,
    user: &str,
    rate_limit: u32,
    password: &str,
    call_id: &str,
) -> (Vec<String>, Vec<String>) {
    guess_call(keys, packet_id, user, (rate_limit, 0), password, call_id)
}

/// [`grab_call`] with the packet's guess budget: `limits` is (the user's rate limit, the
/// packet's wrong guesses per window; 0: no budget), both per [`GRAB_WINDOW_MS`].
pub fn guess_call(
    keys: &Keys,
    packet_id: &str,
    user: &str,
    limits: (u32, u32),
    password: &str,
    call_id: &str,
) -> (Vec<String>, Vec<String>) {
    let pk = keys.packet(packet_id);
    GrabCall {
        meta: &pk.meta,
        shares: &pk.shares,
        grabs: &pk.grabs,
        rate: &keys.grab_rate(packet_id, user),
        recipients: &pk.recipients,
        wrong_guesses: &pk.wrong_guesses,
        guesses: &pk.wrong_guesses,
        order: &pk.order,
        user_id: user,
        rate_limit: limits.0,
        rate_window_ms: GRAB_WINDOW_MS,
        password,
        call_id,
        guess_budget: limits.1,
        guess_window_ms: GRAB_WINDOW_MS,
        guesses_per_user: 0,
    }
    .texts()
}

/// Creates `new` for `bench-sender` (`what` names it in a failure); returns its packet id.
pub async fn create_packet(store: &Store, new: &NewPacket, what: &str) -> String {
    let CreateOutcome::Created(p) = packets::create(store, "bench-sender", new, None)
        .await
        .unwrap_or_else(|e| panic!("create {what}: {e}"))
    else {
        panic!("{what} create failed")
    };
    p.packet_id
}

/// The server's µs per call of a win on a merchant packet: a fixed packet of `b.calls` shares
/// of 1 cent paid from a merchant's budget (`POST /merchant-packets`' store step), grabbed by
/// as many winners with `grab.lua`, as a user's packet is.
pub async fn merchant_grabs(b: &mut Bench, store: &Store) -> f64 {
    let n = b.calls;
    let keys = Keys::new(&store.config().key_prefix);
    merchants::deposit(store, "bench-shop", n as i64 * 2, "bench-budget")
        .await
        .expect("merchant deposit");
    let req: MerchantPacketRequest = serde_json::from_value(json!({
        "merchant_id": "bench-shop", "order_reference": "bench-order", "sharer_id": "bench-sharer",
        "total_cents": n, "count": n, "mode": "fixed", "payout": "wallet"
    }))
    .expect("merchant packet request");
    let new = req
        .check(&store.config().packets)
        .expect("a valid merchant packet");
    let MerchantPacketOutcome::Created { packet, .. } = merchants::create_packet(store, &new)
        .await
        .expect("create a merchant packet")
    else {
        panic!("merchant packet create failed")
    };
    let limit = store.config().packets.grab_rate_limit;
    let winners: Vec<_> = (0..n)
        .map(|i| {
            grab_call(
                &keys,
                &packet.packet_id,
                &format!("m{i}"),
                limit,
                "",
                &format!("{i:08x}"),
            )
        })
        .collect();
    b.phase(
        "grab win, merchant packet",
        &scripts::GRAB,
        &winners,
        "grabbed",
    )
    .await
}

/// The grab script before it kept the order list and the best luck (the view then read every
/// grab): its win is the baseline of today's.
const BEFORE_PAGES: &str = "34c64c3";

/// The server's µs per call of the plain packet's grab paths.
pub struct PlainGrabs {
    pub win: f64,
    /// A win of [`BEFORE_PAGES`]'s `grab.lua` on a packet of its own, in the same round
    /// (`None`: this clone's history does not hold that commit).
    pub win_before: Option<f64>,
    pub first_again: f64,
    pub again: f64,
    pub again_unlimited: f64,
    pub sold: f64,
    pub limited: f64,
}

/// A fixed packet of `b.calls` shares of 1 cent grabbed by as many winners, then: their first
/// repeat, a later repeat, a repeat with the limit off, as many late users (sold out), and
/// winners over their allowance (rate limited).
pub async fn plain_grabs(b: &mut Bench, store: &Store, new: &NewPacket) -> PlainGrabs {
    let n = b.calls;
    let keys = Keys::new(&store.config().key_prefix);
    let id = create_packet(store, new, "packet").await;
    let limit = store.config().packets.grab_rate_limit;
    let grab =
        |user: String, limit: u32, call_id: &str| grab_call(&keys, &id, &user, limit, "", call_id);
    let winners: Vec<_> = (0..n)
        .map(|i| grab(format!("w{i}"), limit, &format!("{i:08x}")))
        .collect();
    let win = b
        .phase("grab win", &scripts::GRAB, &winners, "grabbed")
        .await;
    let win_before = match crate::wallet::script_at(BEFORE_PAGES, "grab.lua", &["rate_limit.lua"]) {
        Some(source) => {
            let old = Script::new(&source);
            b.sources.push(source);
            let other = create_packet(store, new, "packet before").await;
            // Its header's 7 keys (no order list) and the same arguments.
            let winners: Vec<_> = (0..n)
                .map(|i| {
                    let (k, a) = grab_call(
                        &keys,
                        &other,
                        &format!("v{i}"),
                        limit,
                        "",
                        &format!("{i:08x}"),
                    );
                    (k[..7].to_vec(), a)
                })
                .collect();
            Some(b.phase("grab win, before", &old, &winners, "grabbed").await)
        }
        None => None,
    };
    let winners: Vec<_> = (0..n)
        .map(|i| grab(format!("w{i}"), limit, "ffffffff"))
        .collect();
    // The first repeat finds no counter and opens the window the win began (TIME, SET ... PX);
    // later repeats are GET + INCR.
    let first_again = b
        .phase(
            "grab first repeat",
            &scripts::GRAB,
            &winners,
            "already_grabbed",
        )
        .await;
    let again = b
        .phase("grab repeat", &scripts::GRAB, &winners, "already_grabbed")
        .await;
    let unlimited: Vec<_> = (0..n)
        .map(|i| grab(format!("w{i}"), 0, "ffffffff"))
        .collect();
    let again_unlimited = b
        .phase(
            "grab repeat, limit off",
            &scripts::GRAB,
            &unlimited,
            "already_grabbed",
        )
        .await;
    let late: Vec<_> = (0..n)
        .map(|i| grab(format!("l{i}"), limit, "ffffffff"))
        .collect();
    let sold = b
        .phase("grab sold out", &scripts::GRAB, &late, "sold_out")
        .await;
    // Rate limited: winners that used their whole allowance within the window (a sold-out
    // packet's answer does not reach the limiter).
    let spammers = (n / 50).max(1);
    let allowance: Vec<_> = (0..spammers)
        .flat_map(|i| (0..limit).map(move |_| i))
        .map(|i| grab(format!("w{i}"), limit, "ffffffff"))
        .collect();
    let _ = b.run(&scripts::GRAB, &allowance).await;
    let over: Vec<_> = (0..n)
        .map(|i| grab(format!("w{}", i % spammers), limit, "ffffffff"))
        .collect();
    let limited = b
        .phase("grab rate limited", &scripts::GRAB, &over, "rate_limited")
        .await;
    PlainGrabs {
        win,
        win_before,
        first_again,
        again,
        again_unlimited,
        sold,
        limited,
    }
}

/// A targeted packet of 500 recipients: their wins, then outsiders refused; µs per call of
/// each.
pub async fn targeted_grabs(b: &mut Bench, store: &Store, new: &NewPacket) -> (f64, f64) {
    let n = b.calls;
    let keys = Keys::new(&store.config().key_prefix);
    let limit = store.config().packets.grab_rate_limit;
    let r = n.min(hongbao::packets::rules::MAX_RECIPIENTS);
    let targeted = NewPacket {
        total_cents: r as i64,
        count: r as u32,
        recipients: (0..r).map(|i| format!("t{i}")).collect(),
        ..new.clone()
    };
    let id = create_packet(store, &targeted, "targeted").await;
    let tgrab = |user: String| grab_call(&keys, &id, &user, limit, "", "0a0a0a0a");
    let recipients: Vec<_> = (0..r).map(|i| tgrab(format!("t{i}"))).collect();
    let targeted_win = b
        .phase("grab win, targeted", &scripts::GRAB, &recipients, "grabbed")
        .await;
    let outsiders: Vec<_> = (0..n).map(|i| tgrab(format!("o{i}"))).collect();
    let outsider = b
        .phase(
            "grab not a recipient",
            &scripts::GRAB,
            &outsiders,
            "not_a_recipient",
        )
        .await;
    (targeted_win, outsider)
}

/// The server's µs per call of the password packet's grab paths.
pub struct PasswordGrabs {
    pub win: f64,
    /// A wrong guess without a guess budget (the script before the budget: one INCR).
    pub wrong: f64,
    /// A wrong guess with the budget on and not spent (GET and INCR of the packet's count).
    pub wrong_budgeted: f64,
    /// A guess refused once the packet's budget is spent (one per window per user).
    pub over_budget: f64,
}

/// A password packet: wins with the right password's verifier, then guesses refused (each
/// counted by the rate limit, hence a high limit here: the refusal, not the limiter), without
/// and with the packet's guess budget, then guesses refused over a spent budget.
pub async fn password_grabs(b: &mut Bench, store: &Store, new: &NewPacket) -> PasswordGrabs {
    let n = b.calls;
    let keys = Keys::new(&store.config().key_prefix);
    let secret = serde_json::from_value::<hongbao::packets::rules::password::PasswordText>(json!(
        "open sesame"
    ))
    .expect("password")
    .check()
    .expect("password");
    // Twice the shares the winners take, so that the guesses after them meet shares left.
    let locked = NewPacket {
        total_cents: 2 * n as i64,
        count: 2 * n as u32,
        password: Some(secret.clone()),
        ..new.clone()
    };
    let id = create_packet(store, &locked, "password packet").await;
    let right = secret.verifier(&id);
    let wrong = "0".repeat(64);
    let pgrab =
        |user: String, verifier: &str| grab_call(&keys, &id, &user, u32::MAX, verifier, "0a0a0a0a");
    let unlocked: Vec<_> = (0..n).map(|i| pgrab(format!("p{i}"), &right)).collect();
    let password_win = b
        .phase("grab win, password", &scripts::GRAB, &unlocked, "grabbed")
        .await;
    let guesses: Vec<_> = (0..n).map(|i| pgrab(format!("g{i}"), &wrong)).collect();
    let wrong_password = b
        .phase(
            "grab wrong password",
            &scripts::GRAB,
            &guesses,
            "wrong_password",
        )
        .await;
    // Each user's first guess, as above, with a budget never spent.
    let budgeted: Vec<_> = (0..n)
        .map(|i| {
            let user = format!("h{i}");
            guess_call(&keys, &id, &user, (u32::MAX, u32::MAX), &wrong, "0a0a0a0a")
        })
        .collect();
    let wrong_budgeted = b
        .phase(
            "grab wrong password, budget on",
            &scripts::GRAB,
            &budgeted,
            "wrong_password",
        )
        .await;
    // The budget (1) spent long since: the users who guessed above have had their one guess
    // of the window.
    let over: Vec<_> = (0..n)
        .map(|i| {
            let user = format!("h{i}");
            guess_call(&keys, &id, &user, (u32::MAX, 1), &wrong, "0a0a0a0a")
        })
        .collect();
    let over_budget = b
        .phase(
            "grab guess over the budget",
            &scripts::GRAB,
            &over,
            "rate_limited",
        )
        .await;
    PasswordGrabs {
        win: password_win,
        wrong: wrong_password,
        wrong_budgeted,
        over_budget,
    }
}

/// The server's µs per call of the original red-packet blog post's grab paths, and of the
/// floor of a rate-limited repeat.
pub struct SeedGrabs {
    pub win: f64,
    pub again: f64,
    pub sold: f64,
    pub floor_again: f64,
}

/// The original red-packet blog post's design: a pool of JSON shares, a detail list, a hash of
/// users; `b.calls` winners, their repeats, as many late users; then [`LIMITED_REPEAT_FLOOR`]
/// for the winners.
pub async fn seed_grabs(b: &mut Bench) -> SeedGrabs {
    let n = b.calls;
    let seed = Script::new(SEED_GRAB);
    let (pool, detail, users) = ("seed:{p}:pool", "seed:{p}:detail", "seed:{p}:users");
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut pipe = redis::pipe();
        for i in chunk {
            pipe.cmd("LPUSH")
                .arg(pool)
                .arg(json!({"id": i, "money": 1}).to_string())
                .ignore();
        }
        let _: () = pipe.query_async(&mut b.conn).await.expect("LPUSH");
    }
    let seed_call = |user: String| (strings(&[pool, detail, users, &user]), vec![]);
    let seed_winners: Vec<_> = (0..n).map(|i| seed_call(format!("w{i}"))).collect();
    let win = b.phase("seed win", &seed, &seed_winners, JSON_OBJECT).await;
    let again = b.phase("seed already", &seed, &seed_winners, "1").await;
    let seed_late: Vec<_> = (0..n).map(|i| seed_call(format!("l{i}"))).collect();
    let sold = b.phase("seed sold out", &seed, &seed_late, "0").await;
    let floor_calls: Vec<_> = (0..n)
        .map(|i| {
            let user = format!("w{i}");
            let counter = format!("floor:{{p}}:{user}");
            (strings(&[users, &user, &counter]), vec![])
        })
        .collect();
    let floor = Script::new(LIMITED_REPEAT_FLOOR);
    let floor_again = b
        .phase("floor: limited repeat", &floor, &floor_calls, "1")
        .await;
    SeedGrabs {
        win,
        again,
        sold,
        floor_again,
    }
}

/// Grab paths of `grab.lua` and the original red-packet blog post's design.
pub async fn grab_rows(b: &mut Bench, store: &Store) -> Vec<Row> {
    let n = b.calls;
    wallet::deposit(store, "bench-sender", n as i64 * 5, "bench-fund")
        .await
        .expect("deposit");
    let new = NewPacket {
        mode: Mode::Fixed,
        ..lucky_packet(n as i64, n as u32)
    };
    let hb = plain_grabs(b, store, &new).await;
    let (targeted_win, outsider) = targeted_grabs(b, store, &new).await;
    let pw = password_grabs(b, store, &new).await;
    let seed = seed_grabs(b).await;
    let merchant_win = merchant_grabs(b, store).await;
    let row = |path, usec, baseline, baseline_usec| Row {
        path,
        usec,
        baseline,
        baseline_usec,
        goal: 1.3,
    };
    // A row reported beside its baseline, with no goal.
    let no_goal = |path, usec, baseline, baseline_usec| Row {
        goal: f64::INFINITY,
        ..row(path, usec, baseline, baseline_usec)
    };
    let (seed_win, seed_again_name, seed_sold) = (
        "seed 000 grab: win",
        "seed 000 grab: already grabbed",
        "seed 000 grab: sold out",
    );
    let mut rows = vec![
        row("grab: win", hb.win, seed_win, seed.win),
        row(
            "grab: already grabbed (later repeats)",
            hb.again,
            seed_again_name,
            seed.again,
        ),
        row(
            "grab: already grabbed (first repeat)",
            hb.first_again,
            seed_again_name,
            seed.again,
        ),
        no_goal(
            "grab: already grabbed, rate limit off",
            hb.again_unlimited,
            seed_again_name,
            seed.again,
        ),
        no_goal(
            "floor: seed 000 repeat + a counter (HEXISTS, GET, INCR)",
            seed.floor_again,
            seed_again_name,
            seed.again,
        ),
        row("grab: sold out", hb.sold, seed_sold, seed.sold),
        row(
            "grab: rate limited",
            hb.limited,
            seed_again_name,
            seed.again,
        ),
        no_goal(
            "grab: win, targeted packet (500 recipients)",
            targeted_win,
            seed_win,
            seed.win,
        ),
        // A merchant packet is grabbed by the same script: the same cost, within 5 %.
        Row {
            goal: 1.05,
            ..row(
                "grab: win, merchant packet",
                merchant_win,
                "grab: win",
                hb.win,
            )
        },
        no_goal("grab: win, password packet", pw.win, seed_win, seed.win),
        no_goal(
            "grab: wrong password (refused, counted)",
            pw.wrong,
            seed_sold,
            seed.sold,
        ),
        // The guess budget's cost: the same guess with the packet's count read and taken.
        no_goal(
            "grab: wrong password, guess budget on (refused, counted twice)",
            pw.wrong_budgeted,
            "grab: wrong password (refused, counted)",
            pw.wrong,
        ),
        no_goal(
            "grab: guess over a spent guess budget (rate limited)",
            pw.over_budget,
            "grab: wrong password (refused, counted)",
            pw.wrong,
        ),
        no_goal(
            "grab: not a recipient (refused)",
            outsider,
            seed_sold,
            seed.sold,
        ),
    ];
    // The order list and the best luck a win now keeps, so that a view reads one page: its
    // cost beside the win that kept neither.
    if let Some(before) = hb.win_before {
        rows.push(no_goal(
            "grab: win (keeps the order list and best luck)",
            hb.win,
            "grab: win, 34c64c3's script",
            before,
        ));
    }
    rows
}
