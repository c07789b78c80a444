use super::*;

const DAY_MS: i64 = 86_400_000;

fn journal(
    kind: &str,
    user: &str,
    amount: i64,
    at: i64,
    reference: &str,
    balance: i64,
) -> journal::Entry {
    let fields: BTreeMap<String, String> = [
        ("event_id", format!("e{at}")),
        ("kind", kind.to_string()),
        ("user", user.to_string()),
        ("amount", amount.to_string()),
        ("ref", reference.to_string()),
        ("at", at.to_string()),
        ("balance", balance.to_string()),
        ("extra", if amount == 0 { "0" } else { "" }.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    journal::Entry::from_fields("hb:{0000}:journal", "1-0", &fields).unwrap()
}

fn ledger(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn hash(fields: &[(&str, &str)]) -> HashMap<String, String> {
    fields
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn wallet<'a>(fields: &'a HashMap<String, String>, ledger: &'a [String]) -> Account<'a> {
    Account {
        holder: LedgerOwner::Wallet,
        id: "alice",
        fields,
        ledger,
    }
}

fn merchant<'a>(fields: &'a HashMap<String, String>, ledger: &'a [String]) -> Account<'a> {
    Account {
        holder: LedgerOwner::Merchant,
        id: "shop",
        fields,
        ledger,
    }
}

#[test]
fn a_wallet_whose_ledger_and_journal_agree_reconciles() {
    let items = ledger(&["packet_debit|-300|20|p1", "deposit|1000|10|d1"]);
    let fields = hash(&[("balance", "700")]);
    let j = [
        journal("deposit", "alice", 1000, 10, "d1", 1000),
        journal("packet_debit", "alice", -300, 20, "p1", 700),
        journal("packet_cancelled", "alice", 0, 30, "p1", 5),
        journal("merchant_deposit", "alice", 9, 30, "x", 9),
    ];

    let found = reconcile(&wallet(&fields, &items), &j, DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_balance_off_its_ledger_is_found() {
    let items = ledger(&["deposit|1000|10|d1"]);
    let fields = hash(&[("balance", "1001")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::LedgerSum {
            balance_cents: 1001,
            trimmed_cents: 0,
            ledger_cents: 1000
        }]
    );
}

#[test]
fn a_trimmed_ledger_adds_up_with_its_trimmed_cents() {
    let full: Vec<String> = (0..crate::wallet::rules::LEDGER_CAP)
        .map(|i| format!("deposit|1|{i}|d{i}"))
        .collect();
    let fields = hash(&[("balance", "1500"), (LEDGER_TRIMMED_FIELD, "500")]);

    let found = reconcile(&wallet(&fields, &full), &[], DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_trimmed_ledger_off_by_a_million_is_found() {
    let full: Vec<String> = (0..crate::wallet::rules::LEDGER_CAP)
        .map(|i| format!("deposit|1|{i}|d{i}"))
        .collect();
    let fields = hash(&[("balance", "1001500"), (LEDGER_TRIMMED_FIELD, "500")]);

    let found = reconcile(&wallet(&fields, &full), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::LedgerSum {
            balance_cents: 1_001_500,
            trimmed_cents: 500,
            ledger_cents: 1000
        }]
    );
}

#[test]
fn a_claim_credited_twice_is_found() {
    let items = ledger(&["claim_credit|50|20|p1", "claim_credit|50|10|p1"]);
    let fields = hash(&[("balance", "100")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::Twice {
            kind: "claim_credit",
            reference: "p1".into()
        }]
    );
}

#[test]
fn a_packet_refunds_its_sender_at_the_cancel_and_at_settlement() {
    let items = ledger(&["refund_credit|5|20|p1", "refund_credit|7|10|p1"]);
    let fields = hash(&[("balance", "12")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_deposit_reference_twice_within_the_dedup_window_is_found() {
    let items = ledger(&["deposit|100|50000|d1", "deposit|100|10|d1"]);
    let fields = hash(&[("balance", "200")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::Twice {
            kind: "deposit",
            reference: "d1".into()
        }]
    );
}

#[test]
fn a_deposit_reference_reused_after_the_dedup_window_is_one_more_deposit() {
    let later = 10 + DAY_MS;
    let items = ledger(&[&format!("deposit|100|{later}|d1"), "deposit|100|10|d1"]);
    let fields = hash(&[("balance", "200")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_journal_entry_missing_from_the_ledger_is_found() {
    let items = ledger(&["deposit|1000|10|d1"]);
    let fields = hash(&[("balance", "1000")]);
    let missing = [journal("withdrawal", "alice", -100, 20, "w1", 900)];

    let found = reconcile(&wallet(&fields, &items), &missing, DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::NotInLedger {
            event_id: "e20".into()
        }]
    );
}

#[test]
fn a_journal_entry_with_another_balance_is_found() {
    let items = ledger(&["deposit|1000|10|d1"]);
    let fields = hash(&[("balance", "1000")]);
    let wrong = [journal("deposit", "alice", 1000, 10, "d1", 999)];

    let found = reconcile(&wallet(&fields, &items), &wrong, DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::JournalBalance {
            event_id: "e10".into(),
            expected_cents: 1000,
            journal_cents: 999
        }]
    );
}

#[test]
fn a_bad_balance_is_found() {
    let fields = hash(&[("balance", "-1")]);

    let found = reconcile(&wallet(&fields, &[]), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::Field {
            name: "balance".into(),
            stored: "-1".into()
        }]
    );
}

#[test]
fn a_bad_ledger_item_is_found() {
    let items = ledger(&["deposit|x|1|d"]);
    let fields = hash(&[("balance", "1")]);

    let found = reconcile(&wallet(&fields, &items), &[], DAY_MS);

    assert_eq!(
        found,
        vec![Mismatch::LedgerEntry {
            item: "deposit|x|1|d".into()
        }]
    );
}

#[test]
fn a_merchant_whose_books_close_reconciles() {
    let items = ledger(&[
        "refund_credit|100|30|p1",
        "packet_debit|-300|20|p1",
        "deposit|1000|10|d1",
    ]);
    let fields = hash(&[
        ("balance", "800"),
        ("deposited", "1000"),
        ("paid_cash", "200"),
    ]);
    let j = [
        journal("merchant_deposit", "shop", 1000, 10, "d1", 1000),
        journal("merchant_packet_debit", "shop", -300, 20, "p1", 700),
        journal("merchant_refund", "shop", 100, 30, "p1", 800),
        journal("deposit", "shop", 5, 40, "a-wallet-of-the-same-name", 5),
    ];

    let found = reconcile(&merchant(&fields, &items), &j, DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_merchant_coupon_refund_matches_its_packets_ledger_item() {
    let items = ledger(&[
        "refund_credit|100|30|p1",
        "packet_debit|-300|20|p1",
        "deposit|1000|10|d1",
    ]);
    let fields = hash(&[
        ("balance", "800"),
        ("deposited", "1000"),
        ("paid_coupons", "200"),
    ]);
    let j = [journal(
        "merchant_coupon_refund",
        "shop",
        100,
        30,
        "p1/4",
        800,
    )];

    let found = reconcile(&merchant(&fields, &items), &j, DAY_MS);

    assert_eq!(found, vec![]);
}

#[test]
fn a_merchant_whose_books_do_not_close_is_found() {
    let items = ledger(&["deposit|1000|10|d1"]);
    let fields = hash(&[
        ("balance", "1000"),
        ("deposited", "1000"),
        ("reserved", "1"),
    ]);

    let found = reconcile(&merchant(&fields, &items), &[], DAY_MS);

    assert!(
        matches!(found.as_slice(), [Mismatch::Books { .. }]),
        "{found:?}"
    );
}

#[test]
fn a_journal_entry_of_the_trimmed_ledgers_oldest_millisecond_may_be_gone_from_it() {
    let items = ledger(&["deposit|100|10|d2"]);
    let fields = hash(&[("balance", "200"), (LEDGER_TRIMMED_FIELD, "100")]);
    let trimmed = [journal("deposit", "alice", 100, 10, "d1", 100)];

    let found = reconcile(&wallet(&fields, &items), &trimmed, DAY_MS);

    assert_eq!(found, vec![]);
}
