//! The coupon protocols under retries: each step's script run again after its reply was lost,
//! steps of two runs interleaved, batches cut short and retried around the start and the close.
//! Each test plays the scripts in the order the store runs them and checks what the promise
//! says: a code is issued to a user only where the user's items show it, at most `per_user`,
//! and every uploaded code ends in exactly one place (a pool of its campaign, or free in the
//! directory for any campaign).

use std::collections::BTreeSet;

use harness::{Backend, TestRedis};
use hongbao::coupons::rules::{campaign_id, home_pool, pool_of_code, CodeSource};
use hongbao::coupons::{self, keys::directory, CampaignCreateOutcome, CouponGrabOutcome, PoolKeys};
use hongbao::store::scripts::{
    text, Call, CouponAddCodesCall, CouponCreatePoolCall, CouponGrabCall, CouponResolveCall,
    CouponTakeCall,
};
use hongbao::Store;

use super::{campaign, coupon_store, redis_ms};

use crate::coupons::NO_VISIT_LIMIT as VISITS;

/// Campaign `no` of `pools` uploaded pools, as the store names it.
struct Campaign {
    no: u64,
    pools: u32,
    id: String,
}

impl Campaign {
    fn new(no: u64, pools: u32) -> Self {
        Campaign {
            no,
            pools,
            id: campaign_id(no),
        }
    }

    fn keys(&self, k: u32) -> PoolKeys {
        PoolKeys::new("hb", &self.id, self.no, k, self.pools)
    }

    /// Writes pool `k` with `codes`, grabbing from `starts_at_ms` for ten minutes,
    /// `per_user` codes a user.
    async fn write_pool(
        &self,
        store: &Store,
        k: u32,
        codes: &[&str],
        starts_at_ms: i64,
        per_user: u32,
    ) {
        let keys = self.keys(k);
        let reply = CouponCreatePoolCall {
            pool: &keys.pool,
            codes: &keys.codes,
            fingerprint: "v1:retries",
            title: "retries",
            starts_at_ms,
            ends_at_ms: starts_at_ms + 600_000,
            redeem_by_ms: starts_at_ms + 1_200_000,
            per_user,
            pools: self.pools,
            kind: "uploaded",
            first_index: 0,
            end_index: 0,
            secret: "",
            campaign_total: codes.len() as u64,
            id_tag: "",
            batch: codes,
            ..Default::default()
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        assert_eq!(text("coupon_create_pool", reply).unwrap(), "created");
    }

    /// Sets a field of every pool's hash (moving the start or the end as time would).
    async fn set_every_pool(&self, store: &Store, field: &str, value: i64) {
        let mut conn = store.conn().await.unwrap();
        for k in 0..self.pools {
            let _: i64 = redis::cmd("HSET")
                .arg(self.keys(k).pool)
                .arg(field)
                .arg(value)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    }

    /// `n` codes named `<prefix>-<i>` that land in pools for which `keep` holds.
    fn codes(&self, prefix: &str, n: usize, keep: impl Fn(u32) -> bool) -> Vec<String> {
        (0..)
            .map(|i| format!("{prefix}-{i:04}"))
            .filter(|c| keep(pool_of_code(self.no, c, self.pools)))
            .take(n)
            .collect()
    }

    /// The share of pool `k` of `codes`.
    fn share<'a>(&self, codes: &'a [String], k: u32) -> Vec<&'a str> {
        codes
            .iter()
            .filter(|c| pool_of_code(self.no, c, self.pools) == k)
            .map(String::as_str)
            .collect()
    }

    /// A user whose home pool is `k`.
    fn user_of(&self, k: u32) -> String {
        (0..)
            .map(|u| format!("user-{u}"))
            .find(|u| home_pool(self.no, u, self.pools) == k)
            .unwrap()
    }

    /// Step 1 of a grab of `user` on their home pool, call id `call`.
    async fn grab_step(&self, store: &Store, user: &str, call: &str) -> String {
        let home = home_pool(self.no, user, self.pools);
        let keys = self.keys(home);
        let reply = CouponGrabCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            issued_by_time: &keys.issued_by_time,
            holders: &keys.holders,
            rate: &keys.visits(user),
            pending: &keys.pending,
            journal: &keys.journal,
            user_id: user,
            home,
            rate_limit: 0,
            rate_window_ms: 1_000,
            reservation: call,
            campaign_id: &self.id,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        text("coupon_grab", reply).unwrap()
    }

    /// Step 2 on pool `k` for `user`'s reservation `reservation`.
    async fn take_step(&self, store: &Store, k: u32, user: &str, reservation: &str) -> String {
        let keys = self.keys(k);
        let reply = CouponTakeCall {
            pool: &keys.pool,
            codes: &keys.codes,
            issued: &keys.issued,
            issued_by_time: &keys.issued_by_time,
            loans: &keys.loans,
            journal: &keys.journal,
            user_id: user,
            reservation,
            pool_no: k,
            campaign_id: &self.id,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        text("coupon_take", reply).unwrap()
    }

    /// Steps 2 and 3 of `user`'s reservation as the store runs them: the other pools from the
    /// next one on, the first code taken, then the resolve on the home pool with what was taken.
    async fn walk_and_resolve(&self, store: &Store, user: &str, reservation: &str) -> String {
        let home = home_pool(self.no, user, self.pools);
        let (mut taken, mut opening) = (None, false);
        for step in 1..self.pools {
            let k = (home + step) % self.pools;
            let reply = self.take_step(store, k, user, reservation).await;
            opening |= reply == "unwritten";
            if let Some(rest) = reply.strip_prefix("taken:") {
                let (item, at) = rest.rsplit_once(':').unwrap();
                taken = Some((item.to_string(), at.to_string()));
                break;
            }
        }
        let keys = self.keys(home);
        let none = (String::new(), if opening { "~" } else { "" }.to_string());
        let (item, at) = taken.unwrap_or(none);
        let reply = CouponResolveCall {
            holders: &keys.holders,
            pending: &keys.pending,
            user_id: user,
            reservation,
            item: &item,
            grabbed_at_ms: &at,
        }
        .invocation()
        .invoke_async(&mut store.conn().await.unwrap())
        .await
        .unwrap();
        text("coupon_resolve", reply).unwrap()
    }

    /// What the pools say of `user`: (the codes the user's items name, the codes issued to the
    /// user in the pools' issued records).
    async fn holdings(&self, store: &Store, user: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut conn = store.conn().await.unwrap();
        let home = self.keys(home_pool(self.no, user, self.pools));
        let items: Option<String> = redis::cmd("HGET")
            .arg(&home.holders)
            .arg(user)
            .query_async(&mut conn)
            .await
            .unwrap();
        let held = items
            .unwrap_or_default()
            .split(' ')
            .filter_map(|i| i.split_once('/').map(|(_, c)| c.to_string()))
            .collect();
        let mut issued = BTreeSet::new();
        for k in 0..self.pools {
            let records: Vec<(String, String)> = redis::cmd("HGETALL")
                .arg(self.keys(k).issued)
                .query_async(&mut conn)
                .await
                .unwrap();
            for (code, record) in records {
                if record.split('\n').next() == Some(user) {
                    issued.insert(code);
                }
            }
        }
        (held, issued)
    }

    /// Where each of `codes` is: in a pool's un-issued list, and its directory owner.
    async fn places(&self, store: &Store, codes: &[String]) -> Vec<(String, bool, Option<String>)> {
        let mut conn = store.conn().await.unwrap();
        let mut listed = BTreeSet::new();
        for k in 0..self.pools {
            let codes: Vec<String> = redis::cmd("LRANGE")
                .arg(self.keys(k).codes)
                .arg(0)
                .arg(-1)
                .query_async(&mut conn)
                .await
                .unwrap();
            listed.extend(codes);
        }
        let mut out = Vec::new();
        for code in codes {
            let owner: Option<String> = redis::cmd("HGET")
                .arg(directory("hb", code))
                .arg(code)
                .query_async(&mut conn)
                .await
                .unwrap();
            out.push((code.clone(), listed.contains(code), owner));
        }
        out
    }
}

/// A batch's first run cut short: every code claimed in the directory for the batch, then
/// only the pools in `landed` given their share.
async fn batch_cut_short(
    store: &Store,
    c: &Campaign,
    reference: &str,
    codes: &[String],
    landed: &[u32],
) {
    let owner = format!("{}/{reference}", c.id);
    let mut conn = store.conn().await.unwrap();
    for code in codes {
        let _: bool = redis::cmd("HSETNX")
            .arg(directory("hb", code))
            .arg(code)
            .arg(&owner)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let fingerprint = hongbao::coupons::rules::codes::batch_fingerprint(codes);
    for &k in landed {
        let keys = c.keys(k);
        let share = c.share(codes, k);
        let reply = CouponAddCodesCall {
            pool: &keys.pool,
            codes: &keys.codes,
            batches: &keys.batches,
            reference,
            fingerprint: &fingerprint,
            batch: &share,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await
        .unwrap();
        assert!(text("coupon_add_codes", reply)
            .unwrap()
            .starts_with("added:"));
    }
}

/// Test: one reservation has one outcome. A user of an empty home pool reserves; a first walk
/// finds every other pool empty and resolves the reservation with nothing; then a batch that
/// had landed on pool 0 before the start is retried after it, and a second walk of the same
/// reservation runs. Whatever the batch does, every code issued to the user is one the
/// user's items show, the user holds at most `per_user` (1), and the user's next grab gives
/// no second code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_has_one_outcome_when_a_batch_is_retried_after_the_start() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(31, 3);
        for k in 0..3 {
            c.write_pool(&store, k, &[], now + 600_000, 1).await;
        }
        let codes = c.codes("LATE", 6, |k| k != 0);
        batch_cut_short(&store, &c, "b1", &codes, &[0]).await;
        c.set_every_pool(&store, "starts_at", now - 1_000).await;

        let user = c.user_of(1);
        assert_eq!(
            c.grab_step(&store, &user, "00000000000000a1").await,
            "reserved:00000000000000a1"
        );
        let first = c.walk_and_resolve(&store, &user, "00000000000000a1").await;
        let retried = coupons::add_codes(&store, &c.id, "b1", &codes)
            .await
            .unwrap();
        let second = c.walk_and_resolve(&store, &user, "00000000000000a1").await;
        let next = coupons::grab(&store, &c.id, &user, VISITS).await.unwrap();

        let (held, issued) = c.holdings(&store, &user).await;
        assert!(
            issued.is_subset(&held) && held.len() <= 1,
            "{backend}: issued {issued:?}, held {held:?} (walks {first} then {second}, batch \
             {retried:?}, next grab {next:?})"
        );
    }
}

/// Test: one reservation has one outcome when a pool is written after the first walk passed
/// it (a creation still running): the first walk resolves it as opening (the caller is told to
/// grab again, not sold out), the second walk of the same reservation takes nothing there, and
/// the caller's next grab, a new call, gets the pool's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_has_one_outcome_when_a_pool_is_written_after_the_walk() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(32, 3);
        c.write_pool(&store, 0, &[], now - 1_000, 1).await;
        c.write_pool(&store, 1, &[], now - 1_000, 1).await;
        let user = c.user_of(1);
        assert_eq!(
            c.grab_step(&store, &user, "00000000000000b1").await,
            "reserved:00000000000000b1"
        );
        let first = c.walk_and_resolve(&store, &user, "00000000000000b1").await;
        c.write_pool(&store, 2, &["LATE-P2-1", "LATE-P2-2"], now - 1_000, 1)
            .await;
        let second = c.walk_and_resolve(&store, &user, "00000000000000b1").await;
        let call_again = c.grab_step(&store, &user, "00000000000000b1").await;
        let next = coupons::grab(&store, &c.id, &user, VISITS).await.unwrap();

        let (held, issued) = c.holdings(&store, &user).await;
        assert!(
            issued.is_subset(&held) && held.len() <= 1,
            "{backend}: issued {issued:?}, held {held:?} (walks {first} then {second})"
        );
        assert_eq!(first, "resolved:~\n", "{backend}: the first walk");
        assert_eq!(
            second, first,
            "{backend}: the second walk answered otherwise"
        );
        assert_eq!(call_again, "opening:", "{backend}: the call sent again");
        assert!(
            matches!(&next, CouponGrabOutcome::Grabbed { code, .. } if code.starts_with("LATE-P2-")),
            "{backend}: the next grab: {next:?}"
        );
    }
}

/// Test: a campaign that opens at once, grabbed while its creation is still writing its pools,
/// answers `not_started` (grab again in 1 s), never `sold_out`: a caller whose home pool is not
/// written yet, and a caller whose home pool is empty while the others are not written yet.
/// Once the pools are written both win, on the same sandbox (it remembered no sold out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_still_being_created_is_never_answered_sold_out() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(33, 3);
        c.write_pool(&store, 0, &[], now - 1_000, 1).await;
        let (homed_at_0, homed_at_1) = (c.user_of(0), c.user_of(1));

        let early_0 = coupons::grab(&store, &c.id, &homed_at_0, VISITS)
            .await
            .unwrap();
        let early_1 = coupons::grab(&store, &c.id, &homed_at_1, VISITS)
            .await
            .unwrap();
        c.write_pool(&store, 1, &["OPEN-P1-1"], now - 1_000, 1)
            .await;
        c.write_pool(&store, 2, &["OPEN-P2-1"], now - 1_000, 1)
            .await;
        let late_0 = coupons::grab(&store, &c.id, &homed_at_0, VISITS)
            .await
            .unwrap();
        let late_1 = coupons::grab(&store, &c.id, &homed_at_1, VISITS)
            .await
            .unwrap();

        let opening = CouponGrabOutcome::NotStarted {
            retry_after_ms: coupons::OPENING_RETRY_MS,
        };
        assert_eq!(early_0, opening, "{backend}: home pool written and empty");
        assert_eq!(early_1, opening, "{backend}: home pool not written");
        for (who, late) in [("pool 0's user", &late_0), ("pool 1's user", &late_1)] {
            assert!(
                matches!(late, CouponGrabOutcome::Grabbed { code, .. } if code.starts_with("OPEN-")),
                "{backend}: {who} once the pools are written: {late:?}"
            );
        }
    }
}

/// Test: a batch that landed on some pools before the start, retried after the campaign was
/// closed, pushes nothing into a closed pool: the codes of the pools it missed are free in
/// the directory again, those that landed are counted by the close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_retried_after_the_close_pushes_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(33, 3);
        for k in 0..3 {
            c.write_pool(&store, k, &[], now + 600_000, 1).await;
        }
        let codes = c.codes("SHUT", 9, |_| true);
        assert!((0..3).all(|k| !c.share(&codes, k).is_empty()));
        batch_cut_short(&store, &c, "b2", &codes, &[0, 1]).await;
        c.set_every_pool(&store, "starts_at", now - 2_000).await;
        c.set_every_pool(&store, "ends_at", now - 1_000).await;
        let mut conn = store.conn().await.unwrap();
        let closed = coupons::close::close(&store, &mut conn, c.no)
            .await
            .unwrap();

        let retried = coupons::add_codes(&store, &c.id, "b2", &codes).await;

        let owner = format!("{}/b2", c.id);
        for (code, listed, held_by) in c.places(&store, &codes).await {
            let landed = pool_of_code(c.no, &code, 3) != 2;
            assert!(
                !listed,
                "{backend}: {code} is in a closed pool ({retried:?})"
            );
            assert_eq!(
                held_by.as_deref(),
                landed.then_some(owner.as_str()),
                "{backend}: {code}'s directory owner ({retried:?})"
            );
        }
        let never_issued = c.share(&codes, 0).len() + c.share(&codes, 1).len();
        assert_eq!(
            closed.map(|(counts, _)| counts.never_issued),
            Some(never_issued as u64),
            "{backend}"
        );
    }
}

/// Test: a batch cut short before the start (only pool 1 got its codes) and retried after the
/// start keeps pool 1's codes in the campaign and releases the others in the directory, where
/// a new campaign can take them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_cut_short_and_retried_after_the_start_releases_what_it_missed() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(34, 3);
        for k in 0..3 {
            c.write_pool(&store, k, &[], now + 600_000, 1).await;
        }
        let codes = c.codes("CUT", 9, |_| true);
        batch_cut_short(&store, &c, "b3", &codes, &[1]).await;
        c.set_every_pool(&store, "starts_at", now - 1_000).await;

        let retried = coupons::add_codes(&store, &c.id, "b3", &codes).await;

        let owner = format!("{}/b3", c.id);
        let mut missed = Vec::new();
        for (code, listed, held_by) in c.places(&store, &codes).await {
            let landed = pool_of_code(c.no, &code, 3) == 1;
            assert_eq!(listed, landed, "{backend}: {code} ({retried:?})");
            assert_eq!(
                held_by.as_deref(),
                landed.then_some(owner.as_str()),
                "{backend}: {code}'s directory owner ({retried:?})"
            );
            if !landed {
                missed.push(code);
            }
        }
        let reuse = campaign(now, "reuse", CodeSource::Uploaded(missed));
        assert!(
            matches!(
                coupons::create(&store, &reuse).await,
                Ok(CampaignCreateOutcome::Created(_))
            ),
            "{backend}: the released codes are not free"
        );
    }
}

/// Test: a grab sent again after a later grab of the same user won (its first reply lost)
/// answers its own code, not a new one (`per_user` 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_sent_again_answers_its_own_code() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let c = Campaign::new(35, 1);
        c.write_pool(
            &store,
            0,
            &["AGAIN-1", "AGAIN-2", "AGAIN-3", "AGAIN-4"],
            now - 1_000,
            3,
        )
        .await;

        let a = c.grab_step(&store, "alice", "00000000000000c1").await;
        let b = c.grab_step(&store, "alice", "00000000000000c2").await;
        let a_again = c.grab_step(&store, "alice", "00000000000000c1").await;

        assert_eq!(a_again, a, "{backend}: call a sent again (b: {b})");
        let (held, issued) = c.holdings(&store, "alice").await;
        assert_eq!((held.len(), &issued), (2, &held), "{backend}");
    }
}

/// Test: a creation refused because another campaign claimed one of its codes between its
/// check and its claims leaves none of its codes claimed, also one an earlier run claimed
/// (the claim's reply lost), and answers the same refusal when sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_creation_releases_every_claim_of_its_codes() {
    use hongbao::coupons::rules::generated::new_campaign_secret;
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = coupon_store(&redis, |_| {});
        let now = redis_ms(&store).await;
        let mut conn = store.conn().await.unwrap();
        let other = campaign(now, "other", CodeSource::Uploaded(vec!["CLASH-Z".into()]));
        assert!(matches!(
            coupons::create(&store, &other).await,
            Ok(CampaignCreateOutcome::Created(_))
        ));
        let codes: Vec<String> = ["CLASH-A", "CLASH-B", "CLASH-Z"].map(String::from).into();
        let req = campaign(now, "mine", CodeSource::Uploaded(codes.clone()));
        // An earlier run: the campaign recorded (number 2), CLASH-A claimed, its reply lost.
        let reply = coupons::create::store::record(&mut conn, "hb", &req, &new_campaign_secret())
            .await
            .unwrap();
        assert!(text("coupon_create", reply)
            .unwrap()
            .starts_with("created:2:"));
        let _: bool = redis::cmd("HSETNX")
            .arg(directory("hb", "CLASH-A"))
            .arg("CLASH-A")
            .arg(campaign_id(2))
            .query_async(&mut conn)
            .await
            .unwrap();

        let first = coupons::create(&store, &req).await.unwrap();
        let again = coupons::create(&store, &req).await.unwrap();

        let refused = CampaignCreateOutcome::DuplicateCodes(vec!["CLASH-Z".into()]);
        assert_eq!((&first, &again), (&refused, &refused), "{backend}");
        let c = Campaign::new(2, 1);
        let owners: Vec<Option<String>> = c
            .places(&store, &codes)
            .await
            .into_iter()
            .map(|(_, _, o)| o)
            .collect();
        assert_eq!(owners, [None, None, Some(campaign_id(1))], "{backend}");
    }
}
