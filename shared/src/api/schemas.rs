//! Documentation-only schemas of the OpenAPI document ([`super::openapi`]): the shapes of
//! requests whose Rust type lives in the domain (which knows no HTTP crate), the closed sets
//! the answers' text fields take, and the error answers, one schema per code (or per set of
//! codes of the same shape) with its extra fields typed. Never constructed; the handlers parse
//! and answer with their own types ([`super::error::ApiError`]).

use utoipa::ToSchema;

/// The body of `POST /packets` (unknown fields are refused).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct PacketRequestDoc {
    /// Total, cents (integer, `count..=HONGBAO_MAX_TOTAL_CENTS`; for a `fixed` packet a
    /// multiple of `count`, every share being the same).
    #[schema(minimum = 1)]
    total_cents: i64,
    /// Number of shares (`1..=HONGBAO_MAX_COUNT`).
    #[schema(minimum = 1)]
    count: i64,
    /// The split: `lucky` (default) or `fixed`.
    mode: Option<ModeDoc>,
    /// The lucky split algorithm (default `double_mean`); lucky packets only.
    split: Option<SplitDoc>,
    /// Seconds until the packet expires (`1..=604800`, default 86400).
    #[schema(minimum = 1, maximum = 604_800)]
    expires_in_secs: Option<i64>,
    /// At most 100 characters, no control, invisible format or filler character (default
    /// ignorable code points are allowed only inside emoji sequences).
    #[schema(max_length = 100)]
    greeting: Option<String>,
    /// A targeted packet: the only users who may grab it or see it (besides the sender),
    /// 1 to 500 distinct user ids, at least `count` of them, at most 20,480 bytes (UTF-8)
    /// together.
    #[schema(min_items = 1, max_items = 500)]
    recipients: Option<Vec<String>>,
    /// Seconds from creation until grabs open (`0..=604800`, default 0: at once); a grab
    /// before then is 425 `not_open_yet`. The total is debited at creation, and
    /// `expires_in_secs` counts from the opening.
    #[schema(minimum = 0, maximum = 604_800)]
    opens_in_secs: Option<i64>,
    /// A cover id the client maps to artwork: 1 to 64 characters of `[A-Za-z0-9_.-]` (one of
    /// `HONGBAO_COVERS` when the deployment sets it).
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    cover: Option<String>,
    /// A password packet (口令红包): grabbers must send this phrase in the grab's body. 1 to
    /// 32 characters after NFC normalisation, compared case-sensitively, no control,
    /// invisible or filler character. Stored only as an HMAC verifier; never returned.
    #[schema(min_length = 1, max_length = 32)]
    password: Option<String>,
    /// A draw packet: grabs in the entry window enter a draw (202) instead of taking shares
    /// first come, first served; at `draw_at` the entrants with the smallest tickets win
    /// (docs/design.md, "Draws").
    draw: Option<DrawRequestDoc>,
}

/// A create request's `draw` (unknown fields are refused).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct DrawRequestDoc {
    /// Seconds entries are taken after the packet opens or the campaign starts
    /// (`10..=86400`; a packet's less than `expires_in_secs`, a campaign's draw before
    /// `ends_at`): `draw_at` is the opening or the start plus this.
    #[schema(minimum = 10, maximum = 86_400)]
    entry_secs: i64,
}

/// The body of `POST /merchant-packets` (unknown fields are refused): the order, the sharer,
/// the payout, and the packet's fields with `POST /packets`'s rules.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"merchant_id": "shop-1042", "order_reference": "order-20261128-0042", "sharer_id": "carol", "total_cents": 2000, "count": 6, "payout": "wallet", "sharer_first": true, "expires_in_secs": 86400, "greeting": "Thanks for your order!"}))]
#[allow(dead_code)]
pub struct MerchantPacketRequestDoc {
    /// Whose budget pays: 1 to 64 of `A-Z a-z 0-9 _ . : -`.
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,64}$")]
    merchant_id: String,
    /// The order: 1 to 128 bytes of printable ASCII without spaces. One packet per merchant
    /// and order: the same body again answers 201 and the same packet with `Idempotent-Replayed: true`, debited once; another
    /// body is 409 `order_reference_reused`.
    #[schema(pattern = "^[!-~]{1,128}$")]
    order_reference: String,
    /// The customer who shares the packet to their group: a user id, 1 to 255 printable
    /// characters.
    #[schema(min_length = 1, max_length = 255)]
    sharer_id: String,
    /// Total, cents (as `POST /packets`).
    #[schema(minimum = 1)]
    total_cents: i64,
    /// Number of shares (as `POST /packets`).
    #[schema(minimum = 1)]
    count: i64,
    /// `lucky` (default) or `fixed`.
    mode: Option<ModeDoc>,
    /// The lucky split algorithm (default `double_mean`); lucky packets only.
    split: Option<SplitDoc>,
    /// Seconds until the packet expires (`1..=604800`, default 86400).
    #[schema(minimum = 1, maximum = 604_800)]
    expires_in_secs: Option<i64>,
    /// As `POST /packets`'s greeting.
    #[schema(max_length = 100)]
    greeting: Option<String>,
    /// As `POST /packets`'s cover.
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    cover: Option<String>,
    /// How claimed shares are paid out.
    payout: PayoutDoc,
    /// The coupons' terms: required with `payout: "coupon"`, refused with `"wallet"`.
    coupon: Option<CouponTermsDoc>,
    /// Whether the sharer's own share is taken at creation (a group "fission" packet: the
    /// first share goes to the customer who shares it). Default `false`.
    sharer_first: Option<bool>,
}

/// How a merchant packet's claimed share is paid out.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum PayoutDoc {
    /// Into the grabber's wallet, as a user's packet's share.
    Wallet,
    /// As a coupon of the grabber worth the share (`GET /coupons`; its code
    /// `<packet_id>.<share_id>`), redeemed at checkout through the coupon routes until the
    /// packet's `redeem_by`; never cash.
    Coupon,
}

/// A merchant packet's coupon terms (`payout: "coupon"`).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"min_order_cents": 3000, "redeem_within_secs": 604800}))]
#[allow(dead_code)]
pub struct CouponTermsDoc {
    /// The smallest order total a share's coupon applies to, cents (1 to 10^13); absent: any
    /// order.
    #[schema(minimum = 1, maximum = 10_000_000_000_000_i64)]
    min_order_cents: Option<i64>,
    /// How long after the packet expires its coupons may still be redeemed, seconds (1 to
    /// 31622400, 366 days): `redeem_by = expires_at + redeem_within_secs`.
    #[schema(minimum = 1, maximum = 31_622_400)]
    redeem_within_secs: i64,
}

/// A group name: 1 to 32 characters of `[a-z0-9-]`.
#[derive(ToSchema)]
#[schema(pattern = "^[a-z0-9-]{1,32}$")]
#[allow(dead_code)]
pub struct GroupNameDoc(String);

/// How a packet is split.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum ModeDoc {
    /// Random amounts (the split algorithm decides).
    Lucky,
    /// Equal amounts: `total_cents` must be divisible by `count` (400 otherwise).
    Fixed,
}

/// The lucky split algorithm.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum SplitDoc {
    /// WeChat's "double mean": each share uniform in `[1, 2 × remaining mean]`.
    DoubleMean,
    /// Cut points on a line.
    LineCut,
}

/// A vote's direction.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum DirectionDoc {
    /// +1 vote (+432 score).
    Up,
    /// −1 vote (−432 score).
    Down,
}

/// A red packet's state.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum StatusDoc {
    /// Scheduled: grabs open at `opens_at`.
    Scheduled,
    /// Shares left and not expired.
    Open,
    /// Every share grabbed.
    SoldOut,
    /// Past `expires_at`, not settled yet.
    Expired,
    /// Expired and the unclaimed rest refunded.
    Settled,
    /// Cancelled by its sender: no more grabs, the un-grabbed shares refunded; grabbed shares
    /// stay claimable until `expires_at`.
    Cancelled,
    /// A draw packet from its opening until its draw is complete: grabs enter the draw (202)
    /// until `draw_at`.
    Entering,
    /// A draw packet whose draw is complete: its winners hold their shares.
    Drawn,
}

/// A grab's claim, as a support look-up shows it.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ClaimStateDoc {
    /// Not claimed.
    Unclaimed,
    /// Accepted; the wallet credit or the `done` mark is not recorded yet (the next claim
    /// call or reclaim-cron finishes it).
    Pending,
    /// Credited and marked done by a claim call.
    Done,
    /// Left pending when the claim window closed, credited and marked done by reclaim-cron.
    Redriven,
}

/// A journal entry's kind (the ledger's kinds, the packet events and the coupon events).
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum JournalKindDoc {
    /// A deposit.
    Deposit,
    /// A packet paid for by its sender.
    PacketDebit,
    /// A claimed share.
    ClaimCredit,
    /// A refund to a packet's sender.
    RefundCredit,
    /// Money paid out.
    Withdrawal,
    /// A packet settled (amount 0).
    PacketSettled,
    /// A packet cancelled (amount 0).
    PacketCancelled,
    /// A coupon issued (amount 0).
    CouponIssued,
    /// A coupon redeemed (amount 0).
    CouponRedeemed,
    /// A coupon's redemption reversed (amount 0).
    CouponReleased,
    /// A coupon campaign closed (amount 0).
    CampaignEnded,
    /// Money paid into a merchant's budget.
    MerchantDeposit,
    /// Money paid out of a merchant's budget.
    MerchantWithdrawal,
    /// A merchant packet paid from its merchant's budget.
    MerchantPacketDebit,
    /// An expired merchant packet's unclaimed rest back to its merchant's budget.
    MerchantRefund,
    /// A merchant packet settled (amount 0).
    MerchantPacketSettled,
    /// A merchant packet's unredeemed coupons back to its merchant's budget at `redeem_by`,
    /// or one coupon's redemption reversed after that.
    MerchantCouponRefund,
    /// A draw packet's draw completed (amount 0; the feed's `DrawRun` carries the seed).
    DrawRun,
    /// A wallet's ledger trimmed before its trimmed cents were kept, given its one-time
    /// baseline by reconcile-cron (amount 0).
    LedgerBaseline,
    /// A merchant's ledger given its one-time baseline (amount 0).
    MerchantLedgerBaseline,
}

/// A ledger entry's kind.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum EntryKindDoc {
    /// A deposit (`POST /wallet/deposits`).
    Deposit,
    /// The total of a packet the caller created.
    PacketDebit,
    /// A claimed share.
    ClaimCredit,
    /// The unclaimed rest of an expired packet.
    RefundCredit,
    /// Money paid out (`POST /wallet/withdrawals`).
    Withdrawal,
}

/// An article list's order.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum OrderDoc {
    /// Highest score first.
    Score,
    /// Newest first.
    Time,
}

/// An uploaded coupon code: 4 to 64 characters of `[A-Za-z0-9_-]` (case matters).
#[derive(ToSchema)]
#[schema(pattern = "^[A-Za-z0-9_-]{4,64}$")]
#[allow(dead_code)]
pub struct CouponCodeDoc(String);

/// A coupon campaign's status, by the store's clock.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum CampaignStatusDoc {
    /// Before `starts_at`: grabs answer `not_started`.
    Scheduled,
    /// A draw campaign from its start until its draw has run: grabs enter the caller (202).
    Entering,
    /// Grabbing is open and codes are left.
    Open,
    /// Every code is issued (before `ends_at`).
    SoldOut,
    /// At or after `ends_at`.
    Ended,
}

/// A coupon's state, by the store's clock.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum CouponStateDoc {
    /// Issued, not redeemed, `redeem_by` ahead.
    Issued,
    /// Held for an order at checkout until `held_until` (a lapsed hold is `issued` again).
    Held,
    /// Redeemed at checkout.
    Redeemed,
    /// Not redeemed before `redeem_by`.
    Expired,
}

/// A history list's role.
#[derive(ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
pub enum RoleDoc {
    /// Packets the caller created.
    Sent,
    /// Shares the caller claimed.
    Received,
}

/// Declares an error answer's schema: a struct `$name` with `error` (an inline enum of the
/// listed codes), `message` and the given extra fields.
macro_rules! error_doc {
    (
        $(#[doc = $doc:literal])*
        $name:ident, $codes:ident [$($code:ident),+ $(,)?]
        $(, $(#[$fattr:meta])* $field:ident : $fty:ty)* $(,)?
    ) => {
        #[doc = concat!("Machine-readable code (`error` of `", stringify!($name), "`).")]
        #[derive(utoipa::ToSchema)]
        #[schema(rename_all = "snake_case")]
        #[allow(dead_code)]
        pub enum $codes {
            $(
                #[doc = concat!("`", stringify!($code), "`.")]
                $code,
            )+
        }

        $(#[doc = $doc])*
        #[derive(utoipa::ToSchema)]
        #[allow(dead_code)]
        pub struct $name {
            // No doc comment: utoipa would wrap the inline enum in an `allOf` with an object.
            #[schema(inline)]
            error: $codes,
            /// Human-readable explanation.
            message: String,
            $($(#[$fattr])* $field: $fty,)*
        }
    };
}

error_doc! {
    /// 400: the request is malformed or breaks a rule; nothing was written.
    InvalidRequestError, InvalidRequestCode [InvalidRequest]
}

error_doc! {
    /// 401: no valid caller identity.
    UnauthorizedError, UnauthorizedCode [Unauthorized]
}

error_doc! {
    /// 402: the balance is below the packet's total (the sender's) or the withdrawal's amount.
    InsufficientFundsError, InsufficientFundsCode [InsufficientFunds],
    /// The balance, cents.
    balance_cents: i64,
}

error_doc! {
    /// 403: the caller may not do this.
    ForbiddenError, ForbiddenCode [Forbidden]
}

error_doc! {
    /// 404: no such resource (also the answer to an unknown path).
    NotFoundError, NotFoundCode [NotFound]
}

error_doc! {
    /// 405: the path exists but not with this method (also in the `Allow` header).
    MethodNotAllowedError, MethodNotAllowedCode [MethodNotAllowed],
    /// The allowed methods, e.g. `GET, POST`.
    allow: String,
}

error_doc! {
    /// 409: the `Idempotency-Key` was used with a different request.
    IdempotencyKeyReusedError, IdempotencyKeyReusedCode [IdempotencyKeyReused]
}

error_doc! {
    /// 413: the request body is larger than the 2 MiB limit; nothing was read or written.
    PayloadTooLargeError, PayloadTooLargeCode [PayloadTooLarge]
}

error_doc! {
    /// 415: the request has a body that is not declared `Content-Type: application/json`
    /// (`charset=utf-8` is the only parameter allowed); nothing was read or written.
    UnsupportedMediaTypeError, UnsupportedMediaTypeCode [UnsupportedMediaType]
}

error_doc! {
    /// 429: a rate limit is used up; retry after `Retry-After` seconds. Nothing written.
    RateLimitedError, RateLimitedCode [RateLimited]
}

error_doc! {
    /// 500: a bug; not retryable.
    InternalError, InternalCode [Internal]
}

error_doc! {
    /// 503: Redis trouble; retry after `Retry-After` seconds (the body's `message` says what a retry does where that is not obvious).
    UnavailableError, UnavailableCode [Unavailable]
}
