//! A user's read routes: the wallet with a full ledger ([`LEDGER_CAP`] entries), its support
//! look-up at the first and the last ledger page, and the history of a user who sent
//! [`SENT`] packets (its first page, a page deep in it, the year's totals).

use chrono::Datelike;
use futures::future::join_all;
use hongbao::history::{self, Role};
use hongbao::support;
use hongbao::wallet;
use hongbao::wallet::rules::{LEDGER_CAP, LEDGER_PAGE};
use hongbao::Store;
use redis::aio::MultiplexedConnection;

use crate::support_bench::{create_packet, lucky_packet};
use crate::{measure, row, Row};

/// Packets the history's user sends: 20 pages of the largest page.
const SENT: usize = 2_000;
/// The largest history page (`limit`'s maximum).
const PAGE: u32 = hongbao::history::rules::MAX_LIMIT;

/// `user_id`'s wallet after `n` deposits of 1 cent (each one ledger entry), 200 at a time.
async fn deposits(store: &Store, user_id: &str, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(200) {
        let calls = chunk.iter().map(|i| async move {
            wallet::deposit(store, user_id, 1, &format!("bench-{i}")).await
        });
        for d in join_all(calls).await {
            d.expect("deposit");
        }
    }
}

/// `sender` funded and [`SENT`] one-share packets of 1 cent sent, 100 at a time.
async fn sent(store: &Store, sender: &str) {
    deposits(store, sender, SENT).await;
    let packet = lucky_packet(1, 1);
    for chunk in (0..SENT).collect::<Vec<_>>().chunks(100) {
        join_all(chunk.iter().map(|_| create_packet(store, sender, &packet))).await;
    }
}

/// The cursor of the history page after `pages` pages of `user_id`'s sent list.
async fn cursor_after(store: &Store, user_id: &str, pages: usize) -> history::Cursor {
    let mut cursor = None;
    for _ in 0..pages {
        let p = history::page(store, user_id, Role::Sent, PAGE, cursor.as_ref())
            .await
            .expect("page");
        cursor = Some(p.next_cursor.expect("a next page"));
    }
    cursor.expect("at least one page")
}

/// The user routes' rows.
pub async fn rows(store: &Store, conn: &mut MultiplexedConnection) -> Vec<Row> {
    let (w, h) = ("reader-wallet", "reader-history");
    deposits(store, w, LEDGER_CAP as usize + 100).await;
    sent(store, h).await;
    let deep = cursor_after(store, h, 10).await;
    let year = chrono::Utc::now().year();
    let last = u64::from(LEDGER_CAP) - LEDGER_PAGE as u64;
    let mut rows = Vec::new();
    let mut add = |route: &str, what: &str, m: (f64, u64)| rows.push(row(route, what, m));
    add(
        "GET /wallet",
        "a full ledger: the balance and the newest page",
        measure(conn, || async {
            wallet::get(store, w).await.expect("wallet");
        })
        .await,
    );
    for (what, offset) in [("the first ledger page", 0), ("the last ledger page", last)] {
        add(
            "GET /support/wallets/{user_id}",
            &format!("a full ledger: {what}"),
            measure(conn, || async {
                support::wallet(store, w, offset).await.expect("look-up");
            })
            .await,
        );
    }
    add(
        "GET /packets",
        "2,000 sent: the first page of 100",
        measure(conn, || async {
            history::page(store, h, Role::Sent, PAGE, None)
                .await
                .expect("page");
        })
        .await,
    );
    add(
        "GET /packets",
        "2,000 sent: the 11th page of 100",
        measure(conn, || async {
            history::page(store, h, Role::Sent, PAGE, Some(&deep))
                .await
                .expect("page");
        })
        .await,
    );
    add(
        "GET /packets/summary",
        "2,000 sent: this year's totals",
        measure(conn, || async {
            history::summary(store, h, year).await.expect("summary");
        })
        .await,
    );
    rows
}
