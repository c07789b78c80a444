//! The voting site's read routes with [`ARTICLES`] articles, all in one group: the site's
//! first and last page, and the group's first page from its cache and on the cache's rebuild
//! (the stamp set back before each request: what the first view after
//! `HONGBAO_VOTE_GROUP_CACHE_SECS` pays, once per group and order).

use futures::future::join_all;
use hongbao::store::voting::{self, GroupChange, NewArticle, Order, PostOutcome, SiteKeys};
use hongbao::Store;
use redis::aio::MultiplexedConnection;

use crate::{measure, row, Row};

/// Articles posted, every one in [`GROUP`].
const ARTICLES: u32 = 10_000;
/// The group.
const GROUP: &str = "rust";
/// The poster.
const POSTER: &str = "reader-poster";

/// Posts one article and puts it in [`GROUP`].
async fn post(store: &Store) {
    let new = NewArticle {
        title: "benchmark".into(),
        link: "https://example.com/".into(),
    };
    let PostOutcome::Posted(a) = voting::post(store, POSTER, &new).await.expect("post") else {
        panic!("not posted")
    };
    let change = GroupChange::new(vec![GROUP.into()], Vec::new()).expect("change");
    voting::set_groups(store, &a.id.to_string(), POSTER, &change)
        .await
        .expect("groups");
}

/// The voting routes' rows.
pub async fn rows(store: &Store, conn: &mut MultiplexedConnection) -> Vec<Row> {
    for chunk in (0..ARTICLES).collect::<Vec<_>>().chunks(200) {
        join_all(chunk.iter().map(|_| post(store))).await;
    }
    let last_page = ARTICLES.div_ceil(voting::ARTICLES_PER_PAGE);
    let stamp = SiteKeys::of(store.config()).group_cache_stamp(Order::Score, GROUP);
    let admin = conn.clone();
    let mut rows = Vec::new();
    let mut add = |route: &str, what: &str, m: (f64, u64)| rows.push(row(route, what, m));
    for (what, page) in [("the first page", 1), ("the last page", last_page)] {
        add(
            "GET /articles",
            &format!("10,000 articles: {what} of 25"),
            measure(conn, || async {
                voting::articles(store, Order::Score, page)
                    .await
                    .expect("page");
            })
            .await,
        );
    }
    add(
        "GET /groups/{group}/articles",
        "10,000 in the group: the first page, from the cache",
        measure(conn, || async {
            voting::group_articles(store, GROUP, Order::Score, 1)
                .await
                .expect("page");
        })
        .await,
    );
    add(
        "GET /groups/{group}/articles",
        "10,000 in the group: the first page on the cache's rebuild (+ one SET of the stamp)",
        measure(conn, || {
            let (mut admin, stamp) = (admin.clone(), stamp.clone());
            async move {
                let _: () = redis::cmd("SET")
                    .arg(&stamp)
                    .arg(0)
                    .query_async(&mut admin)
                    .await
                    .expect("SET");
                voting::group_articles(store, GROUP, Order::Score, 1)
                    .await
                    .expect("page");
            }
        })
        .await,
    );
    rows
}
