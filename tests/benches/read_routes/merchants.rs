//! A merchant's read routes and its coupons': the budget with a full ledger, [`PACKETS`]
//! merchant packets, [`CAMPAIGNS`] campaigns of which one user holds a coupon each (and ten
//! of one campaign: `per_user`'s maximum), a 24-pool campaign's issued coupons, and the
//! support look-up of one of those coupons.

use futures::future::join_all;
use hongbao::coupons::rules::campaign::{CodeSource, NewCampaign, VisitLimit, PER_USER};
use hongbao::coupons::{self, CampaignCreateOutcome, CouponGrabOutcome};
use hongbao::merchants;
use hongbao::merchants::rules::{MerchantPacketOutcome, MerchantPacketRequest};
use hongbao::support;
use hongbao::wallet::rules::{LEDGER_CAP, LEDGER_PAGE};
use hongbao::Store;
use redis::aio::MultiplexedConnection;

use crate::{measure, row, Row};

/// The merchant.
const SHOP: &str = "reader-shop";
/// The user holding the coupons.
const HOLDER: &str = "reader-coupons";
/// Merchant packets, and campaigns: three pages of the largest page each.
const PACKETS: usize = 300;
/// Campaigns of [`SHOP`].
const CAMPAIGNS: usize = 300;
/// The largest page of a listing (`limit`'s maximum).
const PAGE: u32 = 100;

/// [`SHOP`]'s budget after `n` deposits of 1,000 cents (each one ledger entry).
async fn deposits(store: &Store, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let calls = chunk.iter().map(|i| async move {
            merchants::deposit(store, SHOP, 1_000, &format!("bench-{i}")).await
        });
        for d in join_all(calls).await {
            d.expect("deposit");
        }
    }
}

/// Merchant packet `i` of [`SHOP`]: 300 cents in 3 fixed shares paid out to wallets.
async fn merchant_packet(store: &Store, i: usize) {
    let req: MerchantPacketRequest = serde_json::from_value(serde_json::json!({
        "merchant_id": SHOP, "order_reference": format!("order-{i}"), "sharer_id": "carol",
        "total_cents": 300, "count": 3, "mode": "fixed", "payout": "wallet"
    }))
    .expect("request");
    let req = req.check(&store.config().packets).expect("valid");
    match merchants::create_packet(store, &req).await.expect("create") {
        MerchantPacketOutcome::Created { .. } => {}
        other => panic!("{other:?}"),
    }
}

/// Campaign `i` of [`SHOP`] (ten generated codes, `per_user` codes a user, open an hour from
/// `now_ms`); its public id.
async fn campaign(store: &Store, i: usize, per_user: u32, now_ms: i64) -> String {
    let req = NewCampaign {
        merchant_id: Some(SHOP.into()),
        per_user,
        ..NewCampaign::new(
            "bench read",
            CodeSource::Generated(10),
            now_ms + 3_600_000,
            format!("bench-read-{i}"),
        )
    };
    match coupons::create(store, &req).await.expect("create") {
        CampaignCreateOutcome::Created(c) => c.campaign_id,
        other => panic!("{other:?}"),
    }
}

/// Coupons [`wide_campaign`] issues, one a user.
const WIDE_ISSUED: usize = 2_400;

/// A campaign of 24 pools (60,000 generated codes, no merchant) of which [`WIDE_ISSUED`]
/// users grabbed a coupon each; its public id.
async fn wide_campaign(store: &Store, now_ms: i64) -> String {
    let req = NewCampaign::new(
        "bench wide",
        CodeSource::Generated(60_000),
        now_ms + 3_600_000,
        "bench-read-wide",
    );
    let id = match coupons::create(store, &req).await.expect("create") {
        CampaignCreateOutcome::Created(c) => c.campaign_id,
        other => panic!("{other:?}"),
    };
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1,
    };
    for chunk in (0..WIDE_ISSUED).collect::<Vec<_>>().chunks(200) {
        let grabs = chunk.iter().map(|n| {
            let (id, user) = (&id, format!("wide-{n}"));
            async move { coupons::grab(store, id, &user, visits).await }
        });
        for g in join_all(grabs).await {
            match g.expect("grab") {
                CouponGrabOutcome::Grabbed { .. } => {}
                other => panic!("{other:?}"),
            }
        }
    }
    id
}

/// Grabs a coupon of `campaign_id` as [`HOLDER`]; its code.
async fn grab(store: &Store, campaign_id: &str) -> String {
    let visits = VisitLimit {
        per_window: 0,
        window_ms: 1,
    };
    match coupons::grab(store, campaign_id, HOLDER, visits)
        .await
        .expect("grab")
    {
        CouponGrabOutcome::Grabbed { code, .. } => code,
        other => panic!("{other:?}"),
    }
}

/// The merchant and coupon routes' rows.
pub async fn rows(store: &Store, conn: &mut MultiplexedConnection) -> Vec<Row> {
    let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(conn).await.expect("TIME");
    let now_ms = secs * 1_000;
    deposits(store, LEDGER_CAP as usize + 100).await;
    for i in 0..PACKETS {
        merchant_packet(store, i).await;
    }
    let mut code = String::new();
    for i in 0..CAMPAIGNS {
        let id = campaign(store, i, 1, now_ms).await;
        code = grab(store, &id).await;
    }
    let tens = campaign(store, CAMPAIGNS, *PER_USER.end(), now_ms).await;
    for _ in PER_USER {
        grab(store, &tens).await;
    }
    let wide = wide_campaign(store, now_ms).await;
    let wide_next = coupons::issued::issued(store, &wide, PAGE, None)
        .await
        .expect("page")
        .expect("found")
        .next_before
        .expect("a next page");
    let packets_page = merchants::list_packets(store, SHOP, PAGE, None).await;
    let packets_next = packets_page.expect("page").next.expect("a next page");
    let campaigns_next = coupons::list_campaigns(store, SHOP, PAGE, None)
        .await
        .expect("page")
        .next_before;
    let coupons_next = coupons::page(store, HOLDER, PAGE, None)
        .await
        .expect("page")
        .next_cursor
        .expect("a next page");
    let last = u64::from(LEDGER_CAP) - LEDGER_PAGE as u64;
    let mut rows = Vec::new();
    let mut add = |route: &str, what: &str, m: (f64, u64)| rows.push(row(route, what, m));
    for (what, offset) in [("the first ledger page", 0), ("the last ledger page", last)] {
        add(
            "GET /merchants/{merchant_id}",
            &format!("a full ledger: {what}"),
            measure(conn, || async {
                merchants::get(store, SHOP, offset).await.expect("merchant");
            })
            .await,
        );
    }
    for (what, before) in [("first", None), ("second", Some(&packets_next))] {
        add(
            "GET /merchants/{merchant_id}/packets",
            &format!("300 packets: the {what} page of 100"),
            measure(conn, || async {
                merchants::list_packets(store, SHOP, PAGE, before)
                    .await
                    .expect("page");
            })
            .await,
        );
    }
    for (what, before) in [("first", None), ("second", campaigns_next)] {
        add(
            "GET /campaigns",
            &format!("301 campaigns: the {what} page of 100"),
            measure(conn, || async {
                coupons::list_campaigns(store, SHOP, PAGE, before)
                    .await
                    .expect("page");
            })
            .await,
        );
    }
    add(
        "GET /campaigns/{id}",
        "with the caller's 10 codes",
        measure(conn, || async {
            coupons::campaign(store, &tens, Some(HOLDER))
                .await
                .expect("campaign")
                .expect("found");
        })
        .await,
    );
    for (what, cursor) in [("first", None), ("second", Some(&coupons_next))] {
        add(
            "GET /coupons",
            &format!("310 coupons: the {what} page of 100"),
            measure(conn, || async {
                coupons::page(store, HOLDER, PAGE, cursor)
                    .await
                    .expect("page");
            })
            .await,
        );
    }
    for (what, before) in [("first", None), ("second", Some(wide_next.as_str()))] {
        add(
            "GET /campaigns/{id}/coupons",
            &format!("24 pools, 2,400 issued: the {what} page of 100"),
            measure(conn, || async {
                coupons::issued::issued(store, &wide, PAGE, before)
                    .await
                    .expect("page")
                    .expect("found");
            })
            .await,
        );
    }
    add(
        "GET /support/coupons/{code}",
        "an issued coupon",
        measure(conn, || async {
            support::coupon(store, &code)
                .await
                .expect("look-up")
                .expect("found");
        })
        .await,
    );
    rows
}
