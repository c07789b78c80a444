//! Business and health metrics in CloudWatch Embedded Metric Format (EMF).
//!
//! Handlers count through the [`metrics`] facade; in a Lambda sandbox
//! [`crate::lambda::init`] installs `metrics_cloudwatch_embedded`'s recorder, and its
//! service layer ([`crate::lambda::serve`]) prints one EMF JSON line per invocation on
//! stdout, which CloudWatch Logs turns into metrics (no API call, no extra latency). Without a
//! recorder (tests, `make serve`) every call here is a no-op.
//!
//! Every metric is in namespace `HONGBAO_METRICS_NAMESPACE` (default `hongbao`) with one
//! dimension, `Function` = the Lambda function name, so the template's alarms can name them.
//! Only metrics that moved during an invocation are printed.
//!
//! | metric | unit | meaning |
//! | --- | --- | --- |
//! | `GrabWon`, `GrabSoldOut`, `GrabAlreadyGrabbed`, `GrabRateLimited`, `GrabExpired` | count | grab outcomes (of red packets in the grab function, of coupons in the coupon function: `Function` tells them apart) |
//! | `DrawEntered` | count | grabs of a draw packet or campaign answered 202 (entered; a repeat counts again) |
//! | `DrawRun` | count | draws completed (packets and campaigns), counted by ledger-export as it publishes each draw's one `draw_run` entry |
//! | `CouponRedeemed` | count | coupons redeemed now (a repeat is not counted) |
//! | `CouponHeld` | count | checkout holds answered 200 (an order's hold extended, or answered again, counts again) |
//! | `CouponReleased` | count | holds released and redemptions reversed now (a repeat is not counted) |
//! | `Claimed` | count | claims that credited a wallet now (a repeat is not counted) |
//! | `ClaimedCents` | count (cents) | cents those claims credited |
//! | `RefundedCents` | count (cents) | cents a reclaim run refunded |
//! | `ReclaimSettled`, `ReclaimFailed` | count | packets a reclaim run settled / could not settle |
//! | `ReclaimRemainingDue` | count | due packets left when a reclaim run ended (the backlog alarm) |
//! | `LedgerExported`, `LedgerExportFailed` | count | journal entries a ledger-export run published / could not publish (a failed run counts 1) |
//! | `LedgerExportLagMs` | milliseconds | age of the oldest journal entry left unexported when a ledger-export run ended (0: none; the lag alarm) |
//! | `ReconcileChecked`, `ReconcileMismatch` | count | accounts (wallets and merchants' budgets) a reconcile-cron run checked / found not reconciled with their ledger, books and journal (the mismatch alarm) |
//! | `ReconcileFailed` | count | reconcile-cron runs that failed (1 each; the next run goes on from the last step saved) |
//! | `Unavailable` | count | answers 503 `unavailable` (Redis trouble) |
//! | `Internal` | count | answers 500 `internal` |
//! | `LatencyMs` | milliseconds | handler time of each HTTP request |
//! | `Requests` | count | HTTP requests answered (every status) |
//! | `Answered4xx`, `Answered5xx` | count | HTTP answers of status 400-499 / 500-599 |
//! | `ColdStart` | count | 1 at a sandbox's first invocation (every function, the scheduled ones too) |
//! | `PacketCreated`, `PacketCreatedCents` | count, count (cents) | red packets created now and the cents debited for them (a repeat of the same `Idempotency-Key` is not counted) |
//! | `PacketCancelled` | count | cancels answered (a re-sent cancel answers the same figures and counts again) |
//! | `ClaimRedriven` | count | pending claims whose wallet credit a reclaim run completed |
//! | `Deposited`, `DepositedCents` | count, count (cents) | deposits applied now and their cents (a repeat of the same reference is not counted) |
//! | `Withdrawn`, `WithdrawnCents` | count, count (cents) | withdrawals applied now and their cents (a repeat is not counted) |
//! | `MerchantLowBalance` | count | a merchant budget left below `HONGBAO_MERCHANT_LOW_BALANCE_CENTS` by a merchant packet or a withdrawal, or a merchant packet refused for want of funds (the low-balance alarm) |
//! | `OrderCodesTaken` | count | order codes handed out |
//! | `Voted` | count | votes that changed an article's votes or direction (a repeat is not counted) |
//! | `ArticlePosted` | count | articles posted |

use crate::domain::settings::Setting;
use crate::domain::{ConfigError, Lookup};

/// `HONGBAO_METRICS_NAMESPACE`.
pub const METRICS_NAMESPACE: Setting = Setting {
    name: "HONGBAO_METRICS_NAMESPACE",
    default: "hongbao",
    meaning: "CloudWatch namespace of the functions' Embedded Metric Format lines (dimension `Function` = the function name): 1 to 255 of `A-Z a-z 0-9 . _ / # : -`, not starting with `AWS/`",
};

/// `AWS_LAMBDA_FUNCTION_NAME`.
pub const FUNCTION_NAME: Setting = Setting {
    name: "AWS_LAMBDA_FUNCTION_NAME",
    default: "local",
    meaning: "set by Lambda: the metrics' `Function` dimension",
};

/// The metrics' settings, in the order of docs/configuration.md.
pub const SETTINGS: &[Setting] = &[METRICS_NAMESPACE, FUNCTION_NAME];

/// Where a sandbox's metrics go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// The CloudWatch namespace ([`METRICS_NAMESPACE`]).
    pub namespace: String,
    /// The `Function` dimension ([`FUNCTION_NAME`]).
    pub function: String,
}

impl MetricsSettings {
    /// Reads [`SETTINGS`]. The namespace follows CloudWatch's rules as `template.yaml`'s
    /// `MetricsNamespace` pattern states them (1 to 255 characters of `A-Z a-z 0-9 . _ / # :
    /// -`; `AWS/` is reserved for AWS services), so a namespace CloudWatch would drop stops
    /// Init instead of losing every metric silently.
    ///
    /// # Errors
    /// [`ConfigError`] naming `HONGBAO_METRICS_NAMESPACE` for a namespace outside those rules.
    pub fn from_lookup(lookup: &Lookup<'_>) -> Result<Self, ConfigError> {
        let namespace: String = lookup.get(&METRICS_NAMESPACE)?;
        let allowed = |c: char| c.is_ascii_alphanumeric() || "._/#:-".contains(c);
        if namespace.len() > 255 || !namespace.chars().all(allowed) {
            return Err(ConfigError::new(
                &METRICS_NAMESPACE,
                &namespace,
                "must be 1 to 255 of A-Z a-z 0-9 . _ / # : -",
            ));
        }
        if namespace.starts_with("AWS/") {
            return Err(ConfigError::new(
                &METRICS_NAMESPACE,
                &namespace,
                "AWS/ is reserved for AWS services",
            ));
        }
        Ok(MetricsSettings {
            namespace,
            function: lookup.get(&FUNCTION_NAME)?,
        })
    }
}

/// Declares each metric name once: a `pub const` per metric and [`ALL`], the list of them.
macro_rules! metrics {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)+) => {
        $($(#[$doc])* pub const $name: &str = $value;)+

        /// Every metric name declared here: the template's dashboard may name only these
        /// (`tests/template_checks/`), and the recorder declares each one's unit at Init.
        pub const ALL: &[&str] = &[$($name),+];
    };
}

metrics! {
    /// A grab that won a share.
    GRAB_WON = "GrabWon";
    /// A grab answered `sold_out`.
    GRAB_SOLD_OUT = "GrabSoldOut";
    /// A grab answered `not_open_yet` (a scheduled packet before its opening).
    GRAB_NOT_OPEN_YET = "GrabNotOpenYet";
    /// A grab answered `wrong_password` (a password packet).
    GRAB_WRONG_PASSWORD = "GrabWrongPassword";
    /// A grab answered `already_grabbed`.
    GRAB_ALREADY_GRABBED = "GrabAlreadyGrabbed";
    /// A grab answered `rate_limited`.
    GRAB_RATE_LIMITED = "GrabRateLimited";
    /// A grab answered `expired`.
    GRAB_EXPIRED = "GrabExpired";
    /// A grab of a draw packet or campaign answered 202: its caller entered the draw (a repeat
    /// counts again).
    DRAW_ENTERED = "DrawEntered";
    /// A draw completed (of a packet or a campaign), counted by ledger-export as it publishes
    /// the draw's one `draw_run` journal entry: each draw once, whoever ran it.
    DRAW_RUN = "DrawRun";
    /// A coupon redeemed now (a repeat of the same order is not counted).
    COUPON_REDEEMED = "CouponRedeemed";
    /// A checkout hold answered 200 (taken, extended, or the order's hold answered again).
    COUPON_HELD = "CouponHeld";
    /// A hold released or a redemption reversed now (a repeat of the same order is not counted).
    COUPON_RELEASED = "CouponReleased";
    /// A claim that credited a wallet now.
    CLAIMED = "Claimed";
    /// Cents credited by claims.
    CLAIMED_CENTS = "ClaimedCents";
    /// Cents refunded by a reclaim run.
    REFUNDED_CENTS = "RefundedCents";
    /// Packets settled by a reclaim run.
    RECLAIM_SETTLED = "ReclaimSettled";
    /// Packets a reclaim run could not settle.
    RECLAIM_FAILED = "ReclaimFailed";
    /// Due packets left after a reclaim run.
    RECLAIM_REMAINING_DUE = "ReclaimRemainingDue";
    /// Journal entries a ledger-export run published (and deleted).
    LEDGER_EXPORTED = "LedgerExported";
    /// Journal entries a ledger-export run could not publish (a run that failed counts 1).
    LEDGER_EXPORT_FAILED = "LedgerExportFailed";
    /// Age of the oldest unexported journal entry when a ledger-export run ended, ms.
    LEDGER_EXPORT_LAG_MS = "LedgerExportLagMs";
    /// Wallets a reconcile run checked against their ledger and journal.
    RECONCILE_CHECKED = "ReconcileChecked";
    /// Wallets a reconcile run found not reconciled (the mismatch alarm).
    RECONCILE_MISMATCH = "ReconcileMismatch";
    /// Reconcile runs that failed (Redis unreachable): 1 per failed run.
    RECONCILE_FAILED = "ReconcileFailed";
    /// 503 `unavailable` answers.
    UNAVAILABLE = "Unavailable";
    /// 500 `internal` answers.
    INTERNAL = "Internal";
    /// Handler time of an HTTP request, ms.
    LATENCY_MS = "LatencyMs";
    /// HTTP requests answered, whatever the status.
    REQUESTS = "Requests";
    /// HTTP answers of status 400 to 499.
    ANSWERED_4XX = "Answered4xx";
    /// HTTP answers of status 500 to 599.
    ANSWERED_5XX = "Answered5xx";
    /// 1 at a sandbox's first invocation (counted at Init, printed with the first invocation).
    COLD_START = "ColdStart";
    /// A red packet created now (a repeat of the same `Idempotency-Key` is not counted).
    PACKET_CREATED = "PacketCreated";
    /// Cents debited from senders for the packets created now.
    PACKET_CREATED_CENTS = "PacketCreatedCents";
    /// A cancel answered 200 (a re-sent cancel answers the same figures and counts again).
    PACKET_CANCELLED = "PacketCancelled";
    /// Pending claims whose wallet credit a reclaim run completed (re-drove).
    CLAIM_REDRIVEN = "ClaimRedriven";
    /// A deposit applied now (a repeat of the same reference is not counted).
    DEPOSITED = "Deposited";
    /// Cents of the deposits applied now.
    DEPOSITED_CENTS = "DepositedCents";
    /// A withdrawal applied now (a repeat of the same reference is not counted).
    WITHDRAWN = "Withdrawn";
    /// Cents of the withdrawals applied now.
    WITHDRAWN_CENTS = "WithdrawnCents";
    /// A merchant budget left low (below `HONGBAO_MERCHANT_LOW_BALANCE_CENTS`) by a merchant
    /// packet or a withdrawal, or a merchant packet refused for want of funds (the low-balance
    /// alarm).
    MERCHANT_LOW_BALANCE = "MerchantLowBalance";
    /// Order codes handed out.
    ORDER_CODES_TAKEN = "OrderCodesTaken";
    /// A vote that changed an article (a new vote or a switch; a repeat is not counted).
    VOTED = "Voted";
    /// An article posted.
    ARTICLE_POSTED = "ArticlePosted";
}

/// Adds `n` to the counter `name`.
pub(crate) fn count(name: &'static str, n: u64) {
    metrics::counter!(name).increment(n);
}

/// Sets the gauge `name` to `value`.
pub(crate) fn gauge(name: &'static str, value: f64) {
    metrics::gauge!(name).set(value);
}

/// Records one `LatencyMs` value.
pub(crate) fn latency_ms(ms: f64) {
    metrics::histogram!(LATENCY_MS).record(ms);
}

/// Declares the units of [`ALL`]: `LatencyMs` and `LedgerExportLagMs` in milliseconds,
/// the rest as counts (CloudWatch shows them so); the two backlog figures are gauges.
pub(crate) fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    for &name in ALL {
        match name {
            LATENCY_MS => describe_histogram!(name, Unit::Milliseconds, name),
            LEDGER_EXPORT_LAG_MS => describe_gauge!(name, Unit::Milliseconds, name),
            RECLAIM_REMAINING_DUE => describe_gauge!(name, Unit::Count, name),
            _ => describe_counter!(name, Unit::Count, name),
        }
    }
}
