//! A packet's view and its pages of grabs (`GET /packets/{id}`, `GET /packets/{id}/grabs`):
//! a page of at most 100 positions whatever the packet's size, the viewer's own grab on any
//! page, the best luck as the grabs recorded it, and a closed packet's receipt joined page by
//! page.

use harness::{Backend, TestRedis};
use hongbao::packets::rules::{best_luck, receipt, GRABS_PAGE};
use hongbao::packets::{self, GrabOutcome, PacketView, ViewAs};
use hongbao::store::keys::Keys;
use hongbao::store::Store;

use crate::common::{create, fund, lucky, store};

/// A packet of `count` shares of 1 cent each at least, `grabbers` of them grabbed by
/// `user0`, `user1`, ... in that order.
async fn grabbed(store: &Store, count: u32, grabbers: u32) -> String {
    fund(store, "sender", i64::from(count) * 3).await;
    let p = create(store, "sender", &lucky(i64::from(count) * 3, count, 600)).await;
    for i in 0..grabbers {
        let out = packets::grab(store, &p.packet_id, &format!("user{i}"))
            .await
            .unwrap();
        assert!(matches!(out, GrabOutcome::Grabbed { .. }), "{out:?}");
    }
    p.packet_id
}

/// The page from share id `from` as `viewer` sees it.
async fn page(store: &Store, id: &str, viewer: &str, from: u32) -> PacketView {
    match packets::view_as(store, id, viewer, from).await.unwrap() {
        ViewAs::Found(v) => *v,
        other => panic!("{other:?}"),
    }
}

/// Share ids of a page's grabs.
fn share_ids(v: &PacketView) -> Vec<u32> {
    v.grabs.iter().map(|g| g.share.share_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_pages_the_grabs_a_hundred_shares_at_a_time() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        let id = grabbed(&store, 250, 250).await;

        let pages = [
            page(&store, &id, "user0", 1).await,
            page(&store, &id, "user0", 101).await,
            page(&store, &id, "user0", 201).await,
        ];

        assert_eq!(
            share_ids(&pages[0]),
            (1..=100).collect::<Vec<_>>(),
            "{backend:?}"
        );
        assert_eq!(share_ids(&pages[1]), (101..=200).collect::<Vec<_>>());
        assert_eq!(share_ids(&pages[2]), (201..=250).collect::<Vec<_>>());
        let cursors: Vec<_> = pages.iter().map(|p| p.next_cursor).collect();
        assert_eq!(cursors, [Some(101), Some(201), None]);
        assert_eq!(GRABS_PAGE, 100);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_viewer_sees_their_own_grab_on_any_page() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let id = grabbed(&store, 150, 150).await;

    let first = page(&store, &id, "user149", 1).await;

    let mine = first.mine.expect("user149's grab");
    assert_eq!(
        (mine.user_id.as_str(), mine.share.share_id),
        ("user149", 150)
    );
    assert!(first.grabs.iter().all(|g| g.user_id != "user149"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_best_luck_the_grabs_recorded_is_the_largest_share() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let id = grabbed(&store, 150, 150).await;

    let first = page(&store, &id, "", 1).await;

    let every = packets::view(&store, &id).await.unwrap().unwrap();
    assert_eq!(every.grabs.len(), 150);
    assert_eq!(first.best_luck, best_luck(&every.grabs));
    assert!(first.best_luck.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_packets_pages_join_into_its_receipt() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let id = grabbed(&store, 250, 120).await;
    packets::cancel(&store, &id, "sender").await.unwrap();

    let mut shares = Vec::new();
    let mut from = Some(1);
    while let Some(at) = from {
        let p = page(&store, &id, "", at).await;
        shares.extend(p.reveal.expect("revealed").shares_cents);
        from = p.next_cursor;
    }

    let packet = page(&store, &id, "", 1).await.packet;
    let (commitment, salt) = (packet.commitment.unwrap(), packet.salt.unwrap());
    assert_eq!(shares.len(), 250);
    assert!(receipt::verify(&commitment, &salt, &shares, 750));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_without_its_order_list_is_paged_from_every_grab() {
    let redis = TestRedis::start(Backend::Standalone);
    let store = store(&redis, |_| {});
    let id = grabbed(&store, 150, 150).await;
    let before = page(&store, &id, "", 101).await;
    let order = Keys::new(&store.config().key_prefix).packet(&id).order;
    let mut conn = store.conn().await.unwrap();
    let _: () = redis::cmd("DEL")
        .arg(&order)
        .query_async(&mut conn)
        .await
        .unwrap();

    let after = page(&store, &id, "", 101).await;

    assert_eq!(share_ids(&after), (101..=150).collect::<Vec<_>>());
    assert_eq!(after, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listings_summaries_are_each_packets_summary() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |_| {});
        let open = grabbed(&store, 5, 5).await;
        let cancelled = grabbed(&store, 5, 2).await;
        packets::cancel(&store, &cancelled, "sender").await.unwrap();
        let ids = vec![open, "not-a-packet".to_string(), cancelled];
        let mut each = Vec::new();
        for id in &ids {
            each.push(packets::summary(&store, id).await.unwrap());
        }

        let listed = packets::summaries(&store, &ids).await.unwrap();

        assert_eq!(listed, each, "{backend:?}");
        assert!(listed[0].is_some() && listed[1].is_none() && listed[2].is_some());
    }
}
