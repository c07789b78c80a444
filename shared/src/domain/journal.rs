//! The money journal as pure rules: the kinds of movement, the entry each movement leaves,
//! how an entry reads as an event on EventBridge, and ledger-export's settings
//! (`HONGBAO_EVENT_BUS_NAME`, `HONGBAO_EXPORT_LOCK_TTL_MS`).
//!
//! The scripts that move money write the entries (`lua/journal.lua`, in the same atomic step
//! as the balance change); [`crate::store::journal`] reads and deletes them; ledger-export
//! ([`crate::lambda::ledger_export`]) publishes them.

use std::collections::BTreeMap;

use super::settings::{self, Setting};
use super::{BadRecord, ConfigError, Lookup};

/// EventBridge's `source` of every event hongbao publishes.
pub const EVENT_SOURCE: &str = "hongbao";

/// What moved the money (the journal's `kind`; EventBridge's `detail-type` is
/// [`Kind::detail_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[schema(description = "A journal entry's kind (the ledger's kinds, the packet events and the coupon events).", as = JournalKind)]
pub enum Kind {
    /// Money paid in by a trusted backend (`POST /wallet/deposits`; positive).
    Deposit,
    /// A packet paid for by its sender (negative).
    PacketDebit,
    /// A grabbed share claimed into the grabber's wallet (positive).
    ClaimCredit,
    /// An expired packet's unclaimed rest returned to its sender (positive).
    RefundCredit,
    /// Money paid out to a trusted backend (`POST /wallet/withdrawals`; negative).
    Withdrawal,
    /// A packet settled: amount 0; [`Entry::refunded_cents`] and [`Entry::claimed_cents`] say
    /// what came back to the sender and what was claimed (the refund itself is its own
    /// [`Kind::RefundCredit`] entry when it is not 0).
    PacketSettled,
    /// A packet cancelled by its sender: amount 0; [`Entry::refunded_cents`] says what came
    /// back at once (the un-grabbed shares; the refund itself is its own
    /// [`Kind::RefundCredit`] entry).
    PacketCancelled,
    /// A coupon code issued to a user (a grab won it); moves no money (amount 0). The
    /// reference is `<campaign_id>/<code or generated index>`, or for a merchant packet's
    /// share claimed as a coupon `<packet_id>/<share_id>` (the code `<packet_id>.<share_id>`),
    /// with [`Entry::share_coupon`] its merchant and value (the cents moved within the
    /// merchant's books, from `reserved` to `outstanding`).
    CouponIssued,
    /// A coupon redeemed at checkout; moves no money. [`Entry::order_reference`] names the
    /// order, [`Entry::discount_cents`] its discount when known.
    CouponRedeemed,
    /// A coupon's redemption reversed (the order failed or was refunded: the coupon is issued
    /// again to the same user); moves no money. [`Entry::order_reference`] names the order
    /// whose redemption was reversed. Releasing a hold is not journaled (a hold never is).
    CouponReleased,
    /// A coupon campaign closed after its end; moves no money. The reference is the campaign
    /// id, [`Entry::campaign_counts`] its final counts.
    CampaignEnded,
    /// Money paid into a merchant's budget by a trusted backend (`POST
    /// /merchants/{merchant_id}/deposits`; positive). The entry's user is the merchant id, its
    /// balance the merchant's.
    MerchantDeposit,
    /// Money paid out of a merchant's budget to a trusted backend (`POST
    /// /merchants/{merchant_id}/withdrawals`; negative). The entry's user is the merchant id.
    MerchantWithdrawal,
    /// A merchant packet paid for out of its merchant's budget (`POST /merchant-packets`;
    /// negative): the cents move from the budget's balance into its reserve. The entry's
    /// user is the merchant id, its reference the packet id.
    MerchantPacketDebit,
    /// An expired merchant packet's unclaimed rest returned to its merchant's budget
    /// (positive). The entry's user is the merchant id, its reference the packet id.
    MerchantRefund,
    /// A merchant packet settled: amount 0; [`Entry::refunded_cents`] and
    /// [`Entry::claimed_cents`] as for [`Kind::PacketSettled`]. The entry's user is the
    /// merchant id.
    MerchantPacketSettled,
    /// A merchant packet's coupons never redeemed, returned to its merchant's budget at their
    /// `redeem_by` (reference the packet id), or one coupon's redemption reversed after that
    /// (reference `<packet_id>/<share_id>`); positive. The entry's user is the merchant id.
    MerchantCouponRefund,
    /// A draw packet's or campaign's draw completed ([`crate::draws::rules`]); moves no money
    /// (amount and balance 0). The entry's user is the packet's sender (empty for a
    /// campaign's), its reference the packet or campaign id, [`Entry::draw`] the reveal anyone
    /// checks the draw with.
    DrawRun,
    /// A wallet's ledger, trimmed before its trimmed cents were kept, given its one-time
    /// baseline by reconcile-cron (`lua/ledger_baseline.lua`); moves no money (amount 0).
    /// [`Entry::ledger_trimmed_cents`] is what the baseline takes the trimmed items to add
    /// up to: the balance less the ledger's items, accepted as it was.
    LedgerBaseline,
    /// A merchant's ledger given its baseline, as [`Kind::LedgerBaseline`]. The entry's user
    /// is the merchant id.
    MerchantLedgerBaseline,
}

impl Kind {
    /// Every kind, in the order above.
    pub const ALL: &'static [Kind] = &[
        Kind::Deposit,
        Kind::PacketDebit,
        Kind::ClaimCredit,
        Kind::RefundCredit,
        Kind::Withdrawal,
        Kind::PacketSettled,
        Kind::PacketCancelled,
        Kind::CouponIssued,
        Kind::CouponRedeemed,
        Kind::CouponReleased,
        Kind::CampaignEnded,
        Kind::MerchantDeposit,
        Kind::MerchantWithdrawal,
        Kind::MerchantPacketDebit,
        Kind::MerchantRefund,
        Kind::MerchantPacketSettled,
        Kind::MerchantCouponRefund,
        Kind::DrawRun,
        Kind::LedgerBaseline,
        Kind::MerchantLedgerBaseline,
    ];

    /// The journal's name of the kind (the ledger's kind where both have it).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Deposit => "deposit",
            Kind::PacketDebit => "packet_debit",
            Kind::ClaimCredit => "claim_credit",
            Kind::RefundCredit => "refund_credit",
            Kind::Withdrawal => "withdrawal",
            Kind::PacketSettled => "packet_settled",
            Kind::PacketCancelled => "packet_cancelled",
            Kind::CouponIssued => "coupon_issued",
            Kind::CouponRedeemed => "coupon_redeemed",
            Kind::CouponReleased => "coupon_released",
            Kind::CampaignEnded => "campaign_ended",
            Kind::MerchantDeposit => "merchant_deposit",
            Kind::MerchantWithdrawal => "merchant_withdrawal",
            Kind::MerchantPacketDebit => "merchant_packet_debit",
            Kind::MerchantRefund => "merchant_refund",
            Kind::MerchantPacketSettled => "merchant_packet_settled",
            Kind::MerchantCouponRefund => "merchant_coupon_refund",
            Kind::DrawRun => "draw_run",
            Kind::LedgerBaseline => "ledger_baseline",
            Kind::MerchantLedgerBaseline => "merchant_ledger_baseline",
        }
    }

    /// EventBridge's `detail-type` of the kind's events (`Deposit`, `PacketDebit`, ...).
    pub fn detail_type(self) -> &'static str {
        match self {
            Kind::Deposit => "Deposit",
            Kind::PacketDebit => "PacketDebit",
            Kind::ClaimCredit => "ClaimCredit",
            Kind::RefundCredit => "RefundCredit",
            Kind::Withdrawal => "Withdrawal",
            Kind::PacketSettled => "PacketSettled",
            Kind::PacketCancelled => "PacketCancelled",
            Kind::CouponIssued => "CouponIssued",
            Kind::CouponRedeemed => "CouponRedeemed",
            Kind::CouponReleased => "CouponReleased",
            Kind::CampaignEnded => "CampaignEnded",
            Kind::MerchantDeposit => "MerchantDeposit",
            Kind::MerchantWithdrawal => "MerchantWithdrawal",
            Kind::MerchantPacketDebit => "MerchantPacketDebit",
            Kind::MerchantRefund => "MerchantRefund",
            Kind::MerchantPacketSettled => "MerchantPacketSettled",
            Kind::MerchantCouponRefund => "MerchantCouponRefund",
            Kind::DrawRun => "DrawRun",
            Kind::LedgerBaseline => "LedgerBaseline",
            Kind::MerchantLedgerBaseline => "MerchantLedgerBaseline",
        }
    }

    /// Whether the kind is a coupon drop's ([`Kind::CouponIssued`], [`Kind::CouponRedeemed`],
    /// [`Kind::CouponReleased`], [`Kind::CampaignEnded`]): it moves no money.
    pub fn is_coupon(self) -> bool {
        matches!(
            self,
            Kind::CouponIssued | Kind::CouponRedeemed | Kind::CouponReleased | Kind::CampaignEnded
        )
    }

    /// Whether the kind moves (or settles a packet of) a merchant's budget
    /// ([`Kind::MerchantDeposit`], [`Kind::MerchantWithdrawal`], [`Kind::MerchantPacketDebit`],
    /// [`Kind::MerchantRefund`], [`Kind::MerchantPacketSettled`], [`Kind::MerchantCouponRefund`],
    /// [`Kind::MerchantLedgerBaseline`]): the entry's user is a
    /// merchant id, not a wallet's owner.
    pub fn is_merchant(self) -> bool {
        matches!(
            self,
            Kind::MerchantDeposit
                | Kind::MerchantWithdrawal
                | Kind::MerchantPacketDebit
                | Kind::MerchantRefund
                | Kind::MerchantPacketSettled
                | Kind::MerchantCouponRefund
                | Kind::MerchantLedgerBaseline
        )
    }

    /// The kind named `s` ([`Kind::as_str`]).
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

/// One journal entry: one movement of money (or a packet's settlement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The entry's id in its journal (a Redis stream id, `<ms>-<seq>`); deleting it marks the
    /// entry exported.
    pub stream_id: String,
    /// The movement's id ([`event_id`]): derived from the entry's place in its journal, so
    /// two entries never share one; a re-published entry carries the same id.
    pub event_id: String,
    /// What moved the money.
    pub kind: Kind,
    /// Whose wallet: the depositor, the sender (debit, refund, settled), the grabber (claim).
    pub user_id: String,
    /// Signed amount, cents (debits negative; 0 for [`Kind::PacketSettled`]).
    pub amount_cents: i64,
    /// The deposit or withdrawal reference, or the packet id.
    pub reference: String,
    /// When, Unix ms (Redis `TIME`).
    pub at_ms: i64,
    /// The wallet's balance after the movement, cents.
    pub balance_cents: i64,
    /// For [`Kind::PacketSettled`]: cents refunded to the sender over the packet's life; for
    /// [`Kind::PacketCancelled`]: cents refunded at the cancel.
    pub refunded_cents: Option<i64>,
    /// For [`Kind::PacketSettled`]: cents claimed by grabbers.
    pub claimed_cents: Option<i64>,
    /// For [`Kind::CouponRedeemed`]: the order that redeemed the coupon; for
    /// [`Kind::CouponReleased`]: the order whose redemption was reversed.
    pub order_reference: Option<String>,
    /// For [`Kind::CouponRedeemed`]: the order's discount, cents, when its total was given
    /// (entries written before discounts existed have none).
    pub discount_cents: Option<i64>,
    /// For [`Kind::CampaignEnded`]: the campaign's final counts.
    pub campaign_counts: Option<CampaignCounts>,
    /// For [`Kind::CouponIssued`], [`Kind::CouponRedeemed`] and [`Kind::CouponReleased`]: the
    /// code as the user sees it,
    /// filled in by the store before publishing (a generated code's entry holds its index,
    /// which the campaign's key turns into the code); `None` as read.
    pub code: Option<String>,
    /// For the entries of a campaign (its coupons', [`Kind::CampaignEnded`], its
    /// [`Kind::DrawRun`]): the campaign's public id (the reference names it by its number's 5
    /// characters), filled in by the store before publishing; `None` as read.
    pub campaign_id: Option<String>,
    /// For [`Kind::CouponIssued`] of a merchant packet's share: its merchant and the coupon's
    /// value.
    pub share_coupon: Option<IssuedShare>,
    /// For [`Kind::DrawRun`]: the draw's reveal.
    pub draw: Option<DrawRunFigures>,
    /// For [`Kind::LedgerBaseline`] and [`Kind::MerchantLedgerBaseline`]: the cents the
    /// baseline takes the items trimmed off the ledger to add up to.
    pub ledger_trimmed_cents: Option<i64>,
}

/// A completed draw as its `draw_run` entry's `extra` holds it:
/// `<entrants>|<winners>|<seed>|<commitment>|<threshold or empty>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawRunFigures {
    /// How many users entered.
    pub entrants: u64,
    /// How many won: `min(count, entrants)`.
    pub winners: u64,
    /// The seed, 64 lowercase hex digits.
    pub seed: String,
    /// The commitment published at creation, 64 lowercase hex digits.
    pub commitment: String,
    /// The largest winning ticket; `None` when nobody entered.
    pub threshold: Option<String>,
}

/// A merchant packet's share issued as a coupon (a `coupon_issued` entry's `extra`:
/// `<merchant_id>|<amount_off_cents>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedShare {
    /// The merchant whose books hold the coupon's value.
    pub merchant_id: String,
    /// What the coupon takes off an order, cents.
    pub amount_off_cents: i64,
}

/// A closed campaign's final counts (the `campaign_ended` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CampaignCounts {
    /// Codes issued to users.
    pub issued: u64,
    /// Issued codes redeemed by the close.
    pub redeemed: u64,
    /// Codes never issued (their storage released).
    pub never_issued: u64,
}

impl Entry {
    /// For a coupon entry, the campaign and the item (`<campaign_id>/<code or index>`; the
    /// item is empty for [`Kind::CampaignEnded`]); `None` for a money entry.
    pub fn coupon_parts(&self) -> Option<(&str, &str)> {
        if !self.kind.is_coupon() {
            return None;
        }
        Some(
            self.reference
                .split_once('/')
                .unwrap_or((self.reference.as_str(), "")),
        )
    }

    /// For a [`Kind::DrawRun`] entry, the packet or campaign drawn (its reference); `None`
    /// for any other kind.
    pub fn drawn(&self) -> Option<&str> {
        (self.kind == Kind::DrawRun).then_some(self.reference.as_str())
    }
}

/// The id of the entry at `stream_id` in journal `journal` (its key) of kind `kind` (as the
/// journal names it), by `user`, of reference `reference`, at `at_ms` (Unix ms): SHA-1 hex of
/// `journal \n stream_id \n kind \n user \n reference \n at_ms`.
///
/// Unique by construction: one journal per hash tag, and a stream id is given once within its
/// journal (Redis makes each new id greater than the last); the movement's fields are hashed
/// in too, so an id given again after the journal was emptied and deleted, or after a failover
/// lost an entry, names another movement only if that movement has the same kind, user,
/// reference and millisecond. Entries written before the ids were derived carry their own
/// `event_id` field (SHA-1 hex of `kind \n user \n reference \n at_ms`), which is kept.
pub fn event_id(
    journal: &str,
    stream_id: &str,
    kind: &str,
    user: &str,
    reference: &str,
    at_ms: i64,
) -> String {
    use sha1::{Digest, Sha1};
    let text = format!("{journal}\n{stream_id}\n{kind}\n{user}\n{reference}\n{at_ms}");
    Sha1::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Entry {
    /// Reads the entry at `stream_id` of journal `journal` (its key) from its fields
    /// (`lua/journal.lua`: `kind`, `user`, `amount`, `ref`, `at`, `balance`, `extra`; an entry
    /// written before ids were derived also has `event_id`).
    ///
    /// # Errors
    /// [`BadRecord`] when a field is missing or not of its type.
    pub fn from_fields(
        journal: &str,
        stream_id: &str,
        fields: &BTreeMap<String, String>,
    ) -> Result<Entry, BadRecord> {
        let bad = |what: &str| BadRecord(format!("journal entry {stream_id}: {what}"));
        let text = |name: &str| {
            fields
                .get(name)
                .cloned()
                .ok_or_else(|| bad(&format!("no `{name}`")))
        };
        let int = |name: &str| -> Result<i64, BadRecord> {
            text(name)?
                .parse()
                .map_err(|_| bad(&format!("`{name}` is not an integer")))
        };
        let kind = Kind::parse(&text("kind")?).ok_or_else(|| bad("unknown kind"))?;
        let extra = fields.get("extra").cloned().unwrap_or_default();
        // coupon_redeemed: `<order>` or `<order>\n<discount_cents>` (an order reference holds
        // no whitespace); coupon_released: `<order>`.
        let (order_reference, discount_cents) = match kind {
            Kind::CouponRedeemed => match extra.split_once('\n') {
                Some((order, d)) => (
                    Some(order.to_string()),
                    Some(
                        d.parse::<i64>()
                            .map_err(|_| bad("`extra` is not `<order>\\n<discount_cents>`"))?,
                    ),
                ),
                None => (Some(extra.clone()), None),
            },
            Kind::CouponReleased => (Some(extra.clone()), None),
            _ => (None, None),
        };
        let campaign_counts = match kind {
            Kind::CampaignEnded => {
                let mut n = extra.split('|').map(str::parse::<u64>);
                match (n.next(), n.next(), n.next(), n.next()) {
                    (Some(Ok(issued)), Some(Ok(redeemed)), Some(Ok(never_issued)), None) => {
                        Some(CampaignCounts {
                            issued,
                            redeemed,
                            never_issued,
                        })
                    }
                    _ => return Err(bad("`extra` is not `<issued>|<redeemed>|<never_issued>`")),
                }
            }
            _ => None,
        };
        let (refunded_cents, claimed_cents) = match kind {
            Kind::PacketSettled | Kind::MerchantPacketSettled => {
                let extra = text("extra")?;
                let (r, c) = extra
                    .split_once('|')
                    .and_then(|(r, c)| Some((r.parse().ok()?, c.parse().ok()?)))
                    .ok_or_else(|| bad("`extra` is not `<refunded>|<claimed>`"))?;
                (Some(r), Some(c))
            }
            Kind::PacketCancelled => {
                let r = text("extra")?
                    .parse()
                    .map_err(|_| bad("`extra` is not `<refunded>`"))?;
                (Some(r), None)
            }
            _ => (None, None),
        };
        let draw = match kind {
            Kind::DrawRun => {
                let bad_draw =
                    || bad("`extra` is not `<entrants>|<winners>|<seed>|<commitment>|<threshold>`");
                let parts: Vec<&str> = extra.split('|').collect();
                match parts.as_slice() {
                    [entrants, winners, seed, commitment, threshold] => Some(DrawRunFigures {
                        entrants: entrants.parse().map_err(|_| bad_draw())?,
                        winners: winners.parse().map_err(|_| bad_draw())?,
                        seed: seed.to_string(),
                        commitment: commitment.to_string(),
                        threshold: (!threshold.is_empty()).then(|| threshold.to_string()),
                    }),
                    _ => return Err(bad_draw()),
                }
            }
            _ => None,
        };
        let ledger_trimmed_cents = match kind {
            Kind::LedgerBaseline | Kind::MerchantLedgerBaseline => Some(
                extra
                    .parse::<i64>()
                    .map_err(|_| bad("`extra` is not `<trimmed_cents>`"))?,
            ),
            _ => None,
        };
        let share_coupon = match kind {
            Kind::CouponIssued if !extra.is_empty() => {
                let (m, a) = extra
                    .split_once('|')
                    .ok_or_else(|| bad("`extra` is not `<merchant_id>|<amount_off_cents>`"))?;
                Some(IssuedShare {
                    merchant_id: m.to_string(),
                    amount_off_cents: a
                        .parse()
                        .map_err(|_| bad("`extra` is not `<merchant_id>|<amount_off_cents>`"))?,
                })
            }
            _ => None,
        };
        Ok(Entry {
            stream_id: stream_id.to_string(),
            event_id: match fields.get("event_id") {
                Some(id) => id.clone(),
                None => event_id(
                    journal,
                    stream_id,
                    &text("kind")?,
                    &text("user")?,
                    &text("ref")?,
                    int("at")?,
                ),
            },
            kind,
            user_id: text("user")?,
            amount_cents: int("amount")?,
            reference: text("ref")?,
            at_ms: int("at")?,
            balance_cents: int("balance")?,
            refunded_cents,
            claimed_cents,
            order_reference,
            discount_cents,
            campaign_counts,
            code: None,
            campaign_id: None,
            share_coupon,
            draw,
            ledger_trimmed_cents,
        })
    }
}

/// `HONGBAO_EVENT_BUS_NAME`.
pub const EVENT_BUS_NAME: Setting = Setting {
    name: "HONGBAO_EVENT_BUS_NAME",
    default: settings::NO_DEFAULT,
    meaning: "ledger-export: the EventBridge bus (name or ARN) the journal's events are published to; required by ledger-export",
};
/// `HONGBAO_EXPORT_LOCK_TTL_MS`.
pub const EXPORT_LOCK_TTL_MS: Setting = Setting {
    name: "HONGBAO_EXPORT_LOCK_TTL_MS",
    default: "55000",
    meaning:
        "ledger-export lock lifetime, ms (≥ 1000): runs never overlap; a run stops 5 s before it",
};

/// ledger-export's settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[EVENT_BUS_NAME, EXPORT_LOCK_TTL_MS];

/// How ledger-export publishes the journal (ledger-export reads it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRules {
    /// The bus, name or ARN (`HONGBAO_EVENT_BUS_NAME`); empty where ledger-export's settings
    /// were not read.
    pub event_bus_name: String,
    /// Lock lifetime, ms (`HONGBAO_EXPORT_LOCK_TTL_MS`, ≥ 1000).
    pub lock_ttl_ms: u64,
}

impl Default for ExportRules {
    /// No bus (the settings of a function that does not export), the lock at its default.
    fn default() -> Self {
        ExportRules {
            event_bus_name: String::new(),
            lock_ttl_ms: settings::defaults()
                .at_least(&EXPORT_LOCK_TTL_MS, 1000)
                .expect("the default is valid"),
        }
    }
}

impl ExportRules {
    /// Reads [`SETTINGS`].
    ///
    /// # Errors
    /// [`ConfigError`] naming `HONGBAO_EVENT_BUS_NAME` when it is unset, or the variable that
    /// does not parse or breaks a bound.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let event_bus_name = lookup
            .raw(&EVENT_BUS_NAME)
            .ok_or_else(|| ConfigError::new(&EVENT_BUS_NAME, "", "must be set"))?;
        Ok(ExportRules {
            event_bus_name,
            lock_ttl_ms: lookup.at_least(&EXPORT_LOCK_TTL_MS, 1000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Two entries alike in kind, user, reference and millisecond (a coupon redeemed, released
    /// and redeemed again by one order within 1 ms) get distinct ids from their stream ids;
    /// an entry written with its own `event_id` keeps it.
    #[test]
    fn event_ids_follow_the_stream_id() {
        let journal = "hb:{0000}:journal";
        let alike = [
            ("kind", "coupon_redeemed"),
            ("user", "alice"),
            ("amount", "0"),
            ("ref", "0000A/7"),
            ("at", "1700000000000"),
            ("balance", "0"),
            ("extra", "order-1"),
        ];
        let first = Entry::from_fields(journal, "1700000000000-0", &fields(&alike)).unwrap();
        let again = Entry::from_fields(journal, "1700000000000-2", &fields(&alike)).unwrap();
        let elsewhere = Entry::from_fields("hb:{0001}:journal", "1700000000000-0", &fields(&alike));
        assert_ne!(first.event_id, again.event_id);
        assert_ne!(first.event_id, elsewhere.unwrap().event_id);
        assert_eq!(first.event_id.len(), 40);
        let mut stored = alike.to_vec();
        stored.push(("event_id", "ab"));
        let old = Entry::from_fields(journal, "1-0", &fields(&stored)).unwrap();
        assert_eq!(old.event_id, "ab");
    }

    #[test]
    fn entries_read_back() {
        let base = [
            ("event_id", "ab"),
            ("kind", "withdrawal"),
            ("user", "alice"),
            ("amount", "-300"),
            ("ref", "wd-1"),
            ("at", "1700000000000"),
            ("balance", "9700"),
            ("extra", ""),
        ];
        let e = Entry::from_fields("hb:{0000}:journal", "1-0", &fields(&base)).unwrap();
        assert_eq!(
            (e.kind, e.amount_cents, e.balance_cents),
            (Kind::Withdrawal, -300, 9700)
        );
        assert_eq!(e.refunded_cents, None);
        let mut settled = base;
        settled[1] = ("kind", "packet_settled");
        settled[7] = ("extra", "120|880");
        let e = Entry::from_fields("hb:{0000}:journal", "1-1", &fields(&settled)).unwrap();
        assert_eq!((e.refunded_cents, e.claimed_cents), (Some(120), Some(880)));
        settled[7] = ("extra", "");
        assert!(Entry::from_fields("hb:{0000}:journal", "1-1", &fields(&settled)).is_err());
        let mut bad = base;
        bad[3] = ("amount", "1e3");
        assert!(Entry::from_fields("hb:{0000}:journal", "1-2", &fields(&bad)).is_err());
        for &k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
        }
    }

    #[test]
    fn coupon_entries_read_back_old_and_new() {
        let entry = |kind: &'static str, extra: &'static str| {
            fields(&[
                ("event_id", "ab"),
                ("kind", kind),
                ("user", "alice"),
                ("amount", "0"),
                ("ref", "0001C/SAVE-1"),
                ("at", "1700000000000"),
                ("balance", "0"),
                ("extra", extra),
            ])
        };
        // Written before discounts: the order alone.
        let old = Entry::from_fields(
            "hb:{0000}:journal",
            "1-0",
            &entry("coupon_redeemed", "order-1"),
        )
        .unwrap();
        assert_eq!(
            (old.order_reference.as_deref(), old.discount_cents),
            (Some("order-1"), None)
        );
        let new = Entry::from_fields(
            "hb:{0000}:journal",
            "1-1",
            &entry("coupon_redeemed", "o|2:x\n1500"),
        )
        .unwrap();
        assert_eq!(
            (new.order_reference.as_deref(), new.discount_cents),
            (Some("o|2:x"), Some(1_500))
        );
        assert!(Entry::from_fields(
            "hb:{0000}:journal",
            "1-2",
            &entry("coupon_redeemed", "o\n1.5")
        )
        .is_err());
        let released = Entry::from_fields(
            "hb:{0000}:journal",
            "1-3",
            &entry("coupon_released", "order-1"),
        )
        .unwrap();
        assert_eq!(
            (released.kind, released.order_reference.as_deref()),
            (Kind::CouponReleased, Some("order-1"))
        );
        assert_eq!(released.coupon_parts(), Some(("0001C", "SAVE-1")));
        assert_eq!(released.amount_cents, 0);
    }

    #[test]
    fn the_bus_is_required() {
        let none = |_: &str| None;
        let err = ExportRules::from_lookup(&Lookup::new(&none)).unwrap_err();
        assert_eq!(err.name, "HONGBAO_EVENT_BUS_NAME");
        let set = |n: &str| (n == "HONGBAO_EVENT_BUS_NAME").then(|| "hb-ledger".to_string());
        let rules = ExportRules::from_lookup(&Lookup::new(&set)).unwrap();
        assert_eq!(
            (rules.event_bus_name.as_str(), rules.lock_ttl_ms),
            ("hb-ledger", 55_000)
        );
    }
}
