//! Smoke tests of the test harness itself: real redis-server processes, and moto's
//! EventBridge and CloudWatch Logs endpoints.

use std::collections::HashSet;
use std::time::Instant;

use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use harness::moto::{LedgerFeed, MotoServer, LEDGER_SOURCE};
use harness::{Backend, RedisCluster, RedisServer, TestRedis};
use redis::AsyncCommands;

async fn connect(url: &str) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await
}

#[tokio::test]
async fn standalone_set_get_stop() {
    let t = Instant::now();
    let mut server = RedisServer::start();
    eprintln!("standalone start took {:?}", t.elapsed());
    assert!(server.url().ends_with(&format!(":{}", server.port())));

    let mut conn = connect(&server.url()).await.unwrap();
    let _: () = conn.set("greeting", "hello").await.unwrap();
    let got: String = conn.get("greeting").await.unwrap();
    assert_eq!(got, "hello");

    server.stop();
    assert!(!server.is_running());
    assert!(
        connect(&server.url()).await.is_err(),
        "connecting to a stopped server must fail"
    );
}

#[tokio::test]
async fn persistent_restart_keeps_data() {
    let mut server = RedisServer::start_persistent();
    let port = server.port();
    let mut conn = connect(&server.url()).await.unwrap();
    let _: () = conn.set("survivor", 42).await.unwrap();
    drop(conn);

    server.stop();
    assert!(connect(&server.url()).await.is_err());

    let t = Instant::now();
    server.restart();
    eprintln!("persistent restart took {:?}", t.elapsed());
    assert_eq!(server.port(), port, "restart must keep the port");
    let mut conn = connect(&server.url()).await.unwrap();
    let got: i64 = conn.get("survivor").await.unwrap();
    assert_eq!(got, 42);
}

#[tokio::test]
async fn non_persistent_restart_is_empty() {
    let mut server = RedisServer::start();
    let mut conn = connect(&server.url()).await.unwrap();
    let _: () = conn.set("gone", 1).await.unwrap();
    drop(conn);
    server.restart();
    let mut conn = connect(&server.url()).await.unwrap();
    let n: i64 = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap();
    assert_eq!(n, 0);
}

#[tokio::test]
async fn cluster_spreads_hash_tags_over_nodes() {
    let t = Instant::now();
    let cluster = RedisCluster::start();
    eprintln!("cluster start took {:?}", t.elapsed());
    assert_eq!(cluster.urls().len(), 3);
    assert_eq!(cluster.url(), cluster.urls()[0]);

    let redis = TestRedis::start(Backend::Cluster);
    assert!(redis.is_cluster());
    let mut conn = redis.raw_conn().await;
    // Slots: {a} = 15495, {b} = 3300, {c} = 7365: one in each third of the
    // slot space, so one per master.
    let keys = ["{a}:k", "{b}:k", "{c}:k"];
    for key in keys {
        let _: () = conn.set(key, "v").await.unwrap();
    }
    for key in keys {
        let got: String = conn.get(key).await.unwrap();
        assert_eq!(got, "v");
    }

    let per_node = redis.cluster().unwrap().keys_per_node().await;
    assert_eq!(per_node.len(), 3);
    for node_keys in &per_node {
        assert_eq!(node_keys.len(), 1, "one key per node, got {per_node:?}");
    }
    let mut all = redis.all_keys().await;
    all.sort();
    assert_eq!(all, keys.map(String::from).to_vec());

    redis.flushall().await;
    assert!(redis.all_keys().await.is_empty());
}

#[tokio::test]
async fn test_redis_works_for_every_backend() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        assert_eq!(redis.backend(), backend);
        assert_eq!(redis.is_cluster(), backend == Backend::Cluster);
        let mut conn = redis.raw_conn().await;
        let _: () = redis::cmd("SET")
            .arg("{p1}:amount")
            .arg(100)
            .query_async(&mut conn)
            .await
            .unwrap();
        let n: i64 = conn.incr("{p1}:amount", 5).await.unwrap();
        assert_eq!(n, 105, "{backend}");
        let mut pipe = redis::pipe();
        pipe.get("{p1}:amount").set("{p1}:other", 1).ignore();
        let (v,): (i64,) = pipe.query_async(&mut conn).await.unwrap();
        assert_eq!(v, 105);
        assert_eq!(redis.all_keys().await, vec!["{p1}:amount", "{p1}:other"]);
        redis.flushall().await;
        assert!(redis.all_keys().await.is_empty(), "{backend}");
    }
}

#[test]
fn many_parallel_servers_get_distinct_ports() {
    let t = Instant::now();
    let servers: Vec<RedisServer> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16).map(|_| s.spawn(RedisServer::start)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    eprintln!("16 parallel standalone starts took {:?}", t.elapsed());
    let ports: HashSet<u16> = servers.iter().map(RedisServer::port).collect();
    assert_eq!(ports.len(), servers.len());
}

/// moto (server mode) delivers EventBridge events to a CloudWatch Logs target: `PutEvents` on a
/// [`LedgerFeed`]'s bus comes back from `drain` as EventBridge envelopes, and only once.
#[tokio::test]
async fn moto_delivers_bus_events_to_the_feed() {
    let t = Instant::now();
    let moto = MotoServer::start();
    eprintln!("moto start took {:?}", t.elapsed());
    let feed = LedgerFeed::create(&moto, "hongbao-ledger").await;
    let events = aws_sdk_eventbridge::Client::new(&moto.sdk_config());
    let details = [
        serde_json::json!({"user": "alice", "amount": 1200, "entry": 1}),
        serde_json::json!({"user": "bob", "amount": 34, "entry": 2}),
    ];
    let mut put = events.put_events();
    for detail in &details {
        put = put.entries(
            PutEventsRequestEntry::builder()
                .event_bus_name(feed.bus_name())
                .source(LEDGER_SOURCE)
                .detail_type("Deposit")
                .detail(detail.to_string())
                .build(),
        );
    }
    let out = put.send().await.unwrap();
    assert_eq!(out.failed_entry_count, 0, "{:?}", out.entries);
    // Another source on the same bus: the rule's pattern keeps it out of the feed.
    let other = events
        .put_events()
        .entries(
            PutEventsRequestEntry::builder()
                .event_bus_name(feed.bus_name())
                .source("someone-else")
                .detail_type("Deposit")
                .detail("{}")
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(other.failed_entry_count, 0);

    let envelopes = feed.drain().await;
    let mut got: Vec<(serde_json::Value, serde_json::Value)> = envelopes
        .iter()
        .map(|e| (e["detail-type"].clone(), e["detail"].clone()))
        .collect();
    got.sort_by_key(|(_, detail)| detail["entry"].as_i64());
    let want: Vec<_> = details
        .iter()
        .map(|d| (serde_json::json!("Deposit"), d.clone()))
        .collect();
    assert_eq!(got, want, "envelopes: {envelopes:#?}\n{}", moto.log_tail());
    for envelope in &envelopes {
        assert_eq!(envelope["source"], LEDGER_SOURCE);
        assert_eq!(envelope["region"], harness::moto::REGION);
    }
    assert!(feed.drain().await.is_empty(), "drain deletes what it read");
}
