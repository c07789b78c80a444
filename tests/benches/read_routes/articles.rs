//! The voting site's read routes with [`ARTICLES`] articles, all in one group: the site's
//! first and last page, the group's first and last page from its own ranking, and the group's
//! first page when its ranking is missing (deleted before each request: what a group made
//! before groups kept rankings pays once, on its first page by each order).

use futures::future::join_all;
use hongbao::voting::{self, GroupChange, NewArticle, Order, PostOutcome, SiteKeys};
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
    let ranking = SiteKeys::of(store.config()).group_ranking(Order::Score, GROUP);
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
    for (what, page) in [("the first page", 1), ("the last page", last_page)] {
        add(
            "GET /groups/{group}/articles",
            &format!("10,000 in the group: {what} of 25"),
            measure(conn, || async {
                voting::group_articles(store, GROUP, Order::Score, page)
                    .await
                    .expect("page");
            })
            .await,
        );
    }
    add(
        "GET /groups/{group}/articles",
        "10,000 in a group made before groups kept rankings: its first page (the one-time build, + one DEL)",
        measure(conn, || {
            let (mut admin, ranking) = (admin.clone(), ranking.clone());
            async move {
                let _: () = redis::cmd("DEL")
                    .arg(&ranking)
                    .query_async(&mut admin)
                    .await
                    .expect("DEL");
                voting::group_articles(store, GROUP, Order::Score, 1)
                    .await
                    .expect("page");
            }
        })
        .await,
    );
    rows
}
