//! Test 6: a seeded random workload (deposits, creates, grabs, claims, reclaims, retried and
//! interrupted requests, run in concurrent batches) keeps money conserved at every checkpoint
//! and at the end, on a standalone server and on a cluster.

mod common;

use common::{assert_conserved, sleep_until_redis_ms, store};
use futures::future::join_all;
use harness::{Backend, TestRedis};
use hongbao::packets::{self, CreateOutcome, NewPacket};
use hongbao::split::{LuckySplit, Mode};
use hongbao::{reclaim, scripts, wallet, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One operation of the workload.
#[derive(Debug, Clone)]
enum Op {
    Deposit {
        user: String,
        cents: i64,
        reference: String,
    },
    Create {
        sender: String,
        req: NewPacket,
        key: Option<String>,
    },
    Grab {
        packet: usize,
        user: String,
    },
    Claim {
        packet: usize,
        user: String,
    },
    /// Claim step 1 only, as if the Lambda died before crediting the wallet.
    InterruptedClaim {
        packet: usize,
        user: String,
    },
    Reclaim,
}

/// Runs `op` (twice when `retry`, as a client retrying after a timeout would); returns the
/// cents it deposited and the packets it created (a retried create without an idempotency
/// key rightly creates a second packet).
async fn run(store: &Store, packets_ids: &[String], op: Op, retry: bool) -> (i64, Vec<String>) {
    let times = if retry { 2 } else { 1 };
    let mut deposited = 0;
    let mut created: Vec<String> = Vec::new();
    for _ in 0..times {
        match &op {
            Op::Deposit {
                user,
                cents,
                reference,
            } => {
                if let wallet::DepositOutcome::Applied { .. } =
                    wallet::deposit(store, user, *cents, reference)
                        .await
                        .unwrap()
                {
                    deposited += cents;
                }
            }
            Op::Create { sender, req, key } => {
                match packets::create(store, sender, req, key.as_deref())
                    .await
                    .unwrap()
                {
                    CreateOutcome::Created(p) => created.push(p.packet_id),
                    CreateOutcome::Repeat(p) => {
                        assert_eq!(created, std::slice::from_ref(&p.packet_id))
                    }
                    CreateOutcome::InsufficientFunds { .. } => {}
                    CreateOutcome::IdempotencyKeyReused => panic!("same body, same key"),
                }
            }
            Op::Grab { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    packets::grab(store, id, user).await.unwrap();
                }
            }
            Op::Claim { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    packets::claim(store, id, user).await.unwrap();
                }
            }
            Op::InterruptedClaim { packet, user } => {
                if let Some(id) = packets_ids.get(*packet) {
                    let k = hongbao::keys::Keys::new("hb").packet(id);
                    let mut conn = store.conn().await.unwrap();
                    let _: redis::Value = scripts::CLAIM
                        .key(&k.meta)
                        .key(&k.grabs)
                        .key(&k.claims)
                        .arg(user)
                        .invoke_async(&mut conn)
                        .await
                        .unwrap();
                }
            }
            Op::Reclaim => {
                reclaim::run(store).await.unwrap();
            }
        }
    }
    (deposited, created)
}

fn random_op(rng: &mut StdRng, users: &[String], n_packets: usize, step: usize) -> Op {
    let user = users[rng.random_range(0..users.len())].clone();
    let packet = if n_packets == 0 {
        0
    } else {
        rng.random_range(0..n_packets)
    };
    match rng.random_range(0..100) {
        0..=9 => Op::Deposit {
            user,
            cents: rng.random_range(1..5_000),
            reference: format!("ref-{step}"),
        },
        10..=24 => {
            let count = rng.random_range(1..=30);
            let mode = if rng.random_bool(0.3) {
                Mode::Fixed
            } else {
                Mode::Lucky
            };
            let total = match mode {
                Mode::Fixed => count as i64 * rng.random_range(1..=50),
                Mode::Lucky => rng.random_range(count as i64..=3_000),
            };
            Op::Create {
                sender: user,
                req: NewPacket {
                    total_cents: total,
                    count,
                    mode,
                    split: if rng.random_bool(0.5) {
                        LuckySplit::DoubleMean
                    } else {
                        LuckySplit::LineCut
                    },
                    expires_in_secs: rng.random_range(1..=3),
                    greeting: None,
                },
                key: rng.random_bool(0.5).then(|| format!("idem-{step}")),
            }
        }
        25..=64 => Op::Grab { packet, user },
        65..=84 => Op::Claim { packet, user },
        85..=89 => Op::InterruptedClaim { packet, user },
        _ => Op::Reclaim,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeded_random_workload_conserves_money() {
    for backend in Backend::ALL {
        let redis = TestRedis::start(backend);
        let store = store(&redis, |c| c.grab_rate_limit = 0);
        let mut rng = StdRng::seed_from_u64(0x4842_2026);
        let users: Vec<String> = (0..12).map(|i| format!("w{i}")).collect();
        let mut deposits = 0;
        let mut packet_ids: Vec<String> = Vec::new();
        let mut step = 0;
        for _checkpoint in 0..12 {
            for _batch in 0..5 {
                let ops: Vec<(Op, bool)> = (0..10)
                    .map(|_| {
                        step += 1;
                        (
                            random_op(&mut rng, &users, packet_ids.len(), step),
                            rng.random_bool(0.2),
                        )
                    })
                    .collect();
                let ids = packet_ids.clone();
                let results = join_all(ops.into_iter().map(|(op, retry)| {
                    let (store, ids) = (store.clone(), ids.clone());
                    async move { run(&store, &ids, op, retry).await }
                }))
                .await;
                for (dep, created) in results {
                    deposits += dep;
                    packet_ids.extend(created);
                }
            }
            assert_conserved(&store, &users, &packet_ids, deposits).await;
        }
        assert!(
            packet_ids.len() >= 20,
            "{backend:?}: only {} packets",
            packet_ids.len()
        );
        assert!(deposits > 0);
        // Let everything expire, then reclaim until nothing is due.
        let mut last_expiry = 0;
        for id in &packet_ids {
            last_expiry = last_expiry.max(
                packets::view(&store, id)
                    .await
                    .unwrap()
                    .unwrap()
                    .packet
                    .expires_at_ms,
            );
        }
        sleep_until_redis_ms(&store, last_expiry).await;
        let mut rounds = 0;
        loop {
            let s = reclaim::run(&store).await.unwrap();
            rounds += 1;
            if s.remaining_due == 0 || rounds > 10 {
                break;
            }
        }
        for id in &packet_ids {
            let v = packets::view(&store, id).await.unwrap().unwrap();
            assert_eq!(v.status, packets::Status::Settled, "{id}");
            assert_eq!(
                v.packet.claimed_cents + v.packet.refunded_cents,
                v.packet.total_cents,
                "{id}"
            );
            assert_eq!(
                hongbao::audit::packet_holding(&store, id).await.unwrap(),
                0,
                "{id}"
            );
        }
        assert_conserved(&store, &users, &packet_ids, deposits).await;
        let mut total_balance = 0;
        for u in &users {
            total_balance += wallet::balance(&store, u).await.unwrap();
        }
        assert_eq!(
            total_balance, deposits,
            "{backend:?}: after settlement all money is in wallets"
        );
    }
}
