//! The red packet's read routes at the largest packet the default settings allow
//! (`HONGBAO_MAX_COUNT`, 10,000 shares): the view and its pages of an open and of a cancelled
//! packet, the view through the script it replaced, and the support look-up.

use std::process::Command;

use hongbao::packets::{self, ViewAs};
use hongbao::store::keys::Keys;
use hongbao::support;
use hongbao::wallet;
use hongbao::Store;
use redis::aio::MultiplexedConnection;

use crate::support_bench::{create_packet, grab_as, lucky_packet};
use crate::{measure, row, Row};

/// The packet view's script as it was before it paged (every grab and claim on every view).
const BEFORE: &str = "34c64c3";
/// Shares of the benchmarked packets: `HONGBAO_MAX_COUNT`'s default.
const SHARES: u32 = 10_000;

/// A packet of [`SHARES`] shares, `grabs` of them grabbed (by `user-000000`, ...).
async fn packet(store: &Store, sender: &str, grabs: usize) -> String {
    let total = i64::from(SHARES) * 2;
    wallet::deposit(store, sender, total, &format!("fund-{sender}"))
        .await
        .expect("deposit");
    let id = create_packet(store, sender, &lucky_packet(total, SHARES)).await;
    let users: Vec<String> = (0..grabs).map(|i| format!("user-{i:06}")).collect();
    grab_as(store, &id, &users).await;
    id
}

/// `packet_view.lua` as [`BEFORE`] had it, or `None` outside a git checkout.
fn before_script() -> Option<redis::Script> {
    let out = Command::new("git")
        .args(["show", &format!("{BEFORE}:packet_view.lua")])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| redis::Script::new(&String::from_utf8_lossy(&out.stdout)))
}

/// The view of `id` through [`before_script`].
async fn before_view(store: &Store, script: &redis::Script, id: &str) {
    let pk = Keys::new(&store.config().key_prefix).packet(id);
    let mut conn = store.conn().await.expect("conn");
    let _: redis::Value = script
        .key(&pk.meta)
        .key(&pk.grabs)
        .key(&pk.claims)
        .key(&pk.recipients)
        .key(&pk.shares)
        .arg("user-000001")
        .invoke_async(&mut conn)
        .await
        .expect("the replaced view");
}

/// The page of `id` from `from` as `user-000001` sees it.
async fn page(store: &Store, id: &str, from: u32) {
    let v = packets::view_as(store, id, "user-000001", from)
        .await
        .expect("view");
    assert!(matches!(v, ViewAs::Found(_)));
}

/// The packet routes' rows.
pub async fn rows(store: &Store, conn: &mut MultiplexedConnection) -> Vec<Row> {
    let open = packet(store, "reader-open", SHARES as usize - 1).await;
    let closed = packet(store, "reader-closed", 5_000).await;
    packets::cancel(store, &closed, "reader-closed")
        .await
        .expect("cancel");
    let before = before_script();
    let (s, o, c) = (store, open.as_str(), closed.as_str());
    let mut rows = Vec::new();
    let mut add = |route: &str, what: &str, m: (f64, u64)| rows.push(row(route, what, m));
    add(
        "GET /packets/{id}",
        "open, 9,999 grabs: the first page",
        measure(conn, || page(s, o, 1)).await,
    );
    add(
        "GET /packets/{id}/grabs",
        "open, 9,999 grabs: the last page",
        measure(conn, || page(s, o, 9_901)).await,
    );
    add(
        "GET /packets/{id}",
        "cancelled, 5,000 grabs: the reveal's first page",
        measure(conn, || page(s, c, 1)).await,
    );
    add(
        "GET /packets/{id}/grabs",
        "cancelled: grabs 4,951-5,000, shares 5,001-5,050",
        measure(conn, || page(s, c, 4_951)).await,
    );
    add(
        "GET /packets/{id}/grabs",
        "cancelled: the last page (un-grabbed shares 9,901-10,000)",
        measure(conn, || page(s, c, 9_901)).await,
    );
    if let Some(script) = &before {
        add(
            &format!("GET /packets/{{id}} before ({BEFORE})"),
            "open, 9,999 grabs",
            measure(conn, || before_view(s, script, o)).await,
        );
        add(
            &format!("GET /packets/{{id}} before ({BEFORE})"),
            "cancelled, 5,000 grabs",
            measure(conn, || before_view(s, script, c)).await,
        );
    }
    for (what, from) in [("the first page", 1), ("the last page", 9_901)] {
        add(
            "GET /support/packets/{id}",
            &format!("open, 9,999 grabs: {what} + claims + journals"),
            measure(conn, || async {
                support::packet(s, o, from)
                    .await
                    .expect("look-up")
                    .expect("found");
            })
            .await,
        );
    }
    rows
}
