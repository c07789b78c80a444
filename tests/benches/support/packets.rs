//! Benchmark-sized red packets: a configuration with room for them, the request, its creation.

use hongbao::domain::split::{LuckySplit, Mode};
use hongbao::packets::{self, CreateOutcome, NewPacket};
use hongbao::{Config, Store};

/// The production default configuration on `url` (a cluster's seed node when `cluster`), with
/// room for benchmark-sized packets: no share-count or total cap, no packets-per-minute limit
/// (benches create many packets per sender).
pub fn bench_config(url: String, cluster: bool) -> Config {
    let mut cfg = Config {
        redis_url: url,
        redis_cluster: cluster,
        ..Config::default()
    };
    cfg.packets.max_count = u32::MAX;
    cfg.packets.max_total_cents = i64::MAX;
    cfg.packets.packets_per_minute = 0; // benches create many packets per sender
    cfg.packets.max_open_packets = 0;
    cfg.packets.packets_per_day = 0;
    cfg
}

/// A lucky (double-mean) packet of `count` shares and `total_cents` in all, open at once for
/// anyone, expiring in 3,600 s, with no greeting, cover or password.
pub fn lucky_packet(total_cents: i64, count: u32) -> NewPacket {
    NewPacket {
        total_cents,
        count,
        mode: Mode::Lucky,
        split: LuckySplit::DoubleMean,
        expires_in_secs: 3600,
        greeting: None,
        recipients: Vec::new(),
        opens_in_secs: 0,
        cover: None,
        password: None,
        draw: None,
    }
}

/// Creates `req` for `sender` (who must hold its total); returns the packet's id. Panics on an
/// error or a refusal.
pub async fn create_packet(store: &Store, sender: &str, req: &NewPacket) -> String {
    match packets::create(store, sender, req, None)
        .await
        .expect("create")
    {
        CreateOutcome::Created(p) => p.packet_id,
        other => panic!("create failed: {other:?}"),
    }
}

/// Grabs packet `packet_id` once as each of `users`, 200 at a time; panics unless every grab
/// wins a share.
pub async fn grab_as(store: &Store, packet_id: &str, users: &[String]) {
    for chunk in users.chunks(200) {
        let grabs = chunk.iter().map(|u| packets::grab(store, packet_id, u));
        for g in futures::future::join_all(grabs).await {
            assert!(
                matches!(g.expect("grab"), packets::GrabOutcome::Grabbed { .. }),
                "a grab that did not win"
            );
        }
    }
}
