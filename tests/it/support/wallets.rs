//! `GET /support/wallets/{user_id}`: a wallet mid-claim, its ledger a page at a time,
//! read-only, no idempotency fingerprint, refusals.

use futures::future::join_all;
use serde_json::json;

use super::{claim_until_credited, journal, look_up_wallet, STRANGER};
use crate::common::{self, fund, lucky};
use harness::{Backend, TestRedis};
use hongbao::packets;
use hongbao::packets::rules::GrabOutcome;
use hongbao::store::keys::Keys;

/// Bob's claim credited but not marked done: his look-up shows the money, the claim in flight
/// (`pending`, its amount) and the credit in the journal; once the claim finishes, nothing is
/// in flight. Alice's look-up (she created the packet with an Idempotency-Key) shows no
/// fingerprint. A user never seen answers a zero balance.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wallet_mid_claim() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        fund(&store, "alice", 500).await;
        let created = packets::create(&store, "alice", &lucky(500, 5, 600), Some("support-key-1"))
            .await
            .unwrap();
        let packets::CreateOutcome::Created(p) = created else {
            panic!("{created:?}")
        };
        let pid = &p.packet_id;
        let GrabOutcome::Grabbed { .. } = packets::grab(&store, pid, "bob smith|7").await.unwrap()
        else {
            panic!()
        };
        let share = claim_until_credited(&store, pid, "alice", "bob smith|7").await;

        let before = common::snapshot(&redis).await;
        let (s, b) = look_up_wallet(&store, "bob smith|7", "", None).await;
        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "{backend}: a look-up wrote"
        );
        assert_eq!(s, 200, "{backend}: {b}");
        assert_eq!(b["user_id"], json!("bob smith|7"));
        assert_eq!(b["balance_cents"], json!(share.amount_cents));
        let pending = b["pending_transfers"].as_array().unwrap();
        assert_eq!(pending.len(), 1, "{backend}: {b}");
        assert_eq!(pending[0]["transfer_id"], json!(format!("claim:{pid}")));
        assert_eq!(pending[0]["packet_id"], json!(pid));
        assert_eq!(pending[0]["amount_cents"], json!(share.amount_cents));
        assert_eq!(pending[0]["claim"], json!("pending"));
        assert!(!pending[0]["claimed_at"].is_null());
        assert_eq!(
            journal(&b),
            vec![(
                "claim_credit".into(),
                "bob smith|7".into(),
                share.amount_cents
            )],
            "{backend}: {b}"
        );
        assert_eq!(b["ledger"][0]["kind"], json!("claim_credit"));

        // The claim finishes (the user's next claim call): nothing in flight any more.
        packets::claim(&store, pid, "bob smith|7").await.unwrap();
        let (_, b) = look_up_wallet(&store, "bob smith|7", "", None).await;
        assert_eq!(b["pending_transfers"], json!([]), "{backend}: {b}");
        assert_eq!(b["balance_cents"], json!(share.amount_cents));

        // Alice's idempotency record holds the create's fingerprint; no answer shows it.
        let records = Keys::new("hb").wallet("alice").records;
        let mut conn = store.conn().await.unwrap();
        let values: Vec<String> = redis::cmd("HVALS")
            .arg(&records)
            .query_async(&mut conn)
            .await
            .unwrap();
        let fingerprints: Vec<&str> = values
            .iter()
            .filter_map(|v| v.split_once('\n').map(|(f, _)| f))
            .collect();
        assert!(!fingerprints.is_empty(), "{backend}: {values:?}");
        let (s, b) = look_up_wallet(&store, "alice", "", None).await;
        assert_eq!(s, 200, "{b}");
        let text = b.to_string();
        for f in fingerprints {
            assert!(
                !text.contains(f),
                "{backend}: the fingerprint {f} shown: {text}"
            );
        }
        assert_eq!(
            journal(&b),
            vec![
                ("deposit".into(), "alice".into(), 500),
                ("packet_debit".into(), "alice".into(), -500)
            ],
            "{backend}: {b}"
        );

        let (s, b) = look_up_wallet(&store, "nobody-ever", "", None).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            (
                &b["balance_cents"],
                &b["ledger"],
                &b["next_offset"],
                &b["pending_transfers"]
            ),
            (&json!(0), &json!([]), &json!(null), &json!([]))
        );
    }
}

/// 120 deposits: three pages of 50, 50 and 20 entries, newest first, linked by `next_offset`;
/// the pages together are the ledger. Bad offsets and user ids are 400, strangers 403, and no
/// refusal writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ledger_pages_and_refusals() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        join_all((0..120).map(|i| {
            let store = store.clone();
            async move {
                hongbao::wallet::deposit(&store, "carol", 100 + i, &format!("dep-{i:03}"))
                    .await
                    .unwrap()
            }
        }))
        .await;
        let mut offset = Some(0);
        let mut pages = Vec::new();
        let mut seen = Vec::new();
        while let Some(o) = offset {
            let (s, b) = look_up_wallet(&store, "carol", &format!("offset={o}"), None).await;
            assert_eq!(s, 200, "{backend}: {b}");
            assert_eq!(b["ledger_entries"], json!(120));
            let page = b["ledger"].as_array().unwrap();
            pages.push(page.len());
            seen.extend(
                page.iter()
                    .map(|e| e["reference"].as_str().unwrap().to_string()),
            );
            offset = b["next_offset"].as_u64();
        }
        assert_eq!(pages, [50, 50, 20], "{backend}");
        let ledger = hongbao::wallet::get(&store, "carol").await.unwrap();
        assert_eq!(
            seen[..50],
            ledger
                .entries
                .iter()
                .map(|e| e.reference.clone())
                .collect::<Vec<_>>()[..],
            "{backend}: the first page is GET /wallet's, newest first"
        );
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 120, "{backend}: every entry once");

        let before = common::snapshot(&redis).await;
        for (user, query, status, code) in [
            ("carol", "offset=1000", 400, "invalid_request"),
            ("carol", "offset=-1", 400, "invalid_request"),
            ("carol", "page=2", 400, "invalid_request"),
            ("carol", "offset=1&offset=2", 400, "invalid_request"),
            ("line\nbreak", "", 400, "invalid_request"),
            (&"x".repeat(256), "", 400, "invalid_request"),
        ] {
            let (s, b) = look_up_wallet(&store, user, query, None).await;
            assert_eq!(
                (s, b["error"].as_str()),
                (status, Some(code)),
                "{user:?} {query}: {b}"
            );
        }
        let (s, b) = look_up_wallet(&store, "carol", "", Some(STRANGER)).await;
        assert_eq!((s, b["error"].as_str()), (403, Some("forbidden")), "{b}");
        assert_eq!(
            common::snapshot(&redis).await,
            before,
            "{backend}: a refusal wrote"
        );
    }
}
