//! Coupon drops on Redis: a campaign's codes in pools on their own hash tags ([`keys`]), each
//! step an atomic script on one pool (`lua/coupon_create_pool.lua`, `lua/coupon_grab.lua`,
//! `lua/coupon_take.lua`, `lua/coupon_resolve.lua`, `lua/coupon_hold.lua`,
//! `lua/coupon_redeem.lua`, `lua/coupon_release.lua`, `lua/coupon_batch.lua`,
//! `lua/coupon_add_codes.lua`, `lua/coupon_close.lua`); a campaign is recorded under its
//! merchant reference on the tag `{coupon}` (`lua/coupon_create.lua`), and uploaded codes are
//! claimed in a directory (`lua/coupon_directory_add.lua`, `lua/coupon_directory_remove.lua`). One operation
//! per file, each with its scripts' call structs and the parsing of their replies:
//! [`create`](mod@create), [`add_codes`](mod@add_codes), [`grab`](mod@grab) (then
//! [`take`](mod@take) and [`resolve`](mod@resolve) for an empty home pool), the checkout's
//! [`hold`](mod@hold), [`redeem`](mod@redeem) and [`release`](mod@release) (each finds the
//! code's pool with `locate`), [`close`]; [`campaign`](mod@campaign), [`list`] and
//! [`list_campaigns`](mod@list_campaigns) (a merchant's campaigns) read.
//!
//! Every protocol over several hash slots (a grab's reservation over the pools, a batch over
//! its pools, the directory claims of a creation or a batch) records each step's one outcome
//! where the next step and every re-run read it, first writer wins, so a re-run answers what
//! the first run answered.
//! The rules the scripts keep are in [`crate::domain::coupons`].

pub mod add_codes;
pub mod campaign;
pub mod close;
pub mod create;
pub mod directory;
pub mod draw;
pub(crate) mod facts;
pub mod feed;
pub mod grab;
pub mod hold;
pub mod keys;
pub mod list;
pub mod list_campaigns;
pub(crate) mod locate;
pub mod owner;
pub mod redeem;
pub mod release;
pub mod resolve;
pub mod take;

use crate::store::Store;
pub use add_codes::{add_codes, AddCodesOutcome};
pub use campaign::{campaign, CampaignView, MyCoupon};
pub use create::{create, CampaignCreateOutcome, Created};
pub use grab::{grab, OPENING_RETRY_MS};
pub use hold::{hold, hold_as, HoldOutcome};
pub use keys::{pool_tag, PoolKeys};
pub use list::{page, CouponPage, ListedCoupon};
pub use list_campaigns::{list_campaigns, CampaignPage};
pub use redeem::{redeem, redeem_as, RedeemOutcome};
pub use release::{release, release_as, ReleaseOutcome, Released};

use facts::CampaignFacts;

/// A user of a campaign, as the steps of a reservation need them: the campaign (id and facts)
/// and the user's home pool.
#[derive(Debug, Clone, Copy)]
struct Grabber<'a> {
    /// The campaign's id.
    pub campaign_id: &'a str,
    /// The campaign's pools and code key.
    pub facts: &'a CampaignFacts,
    /// The user's home pool.
    pub home: u32,
    /// The user.
    pub user_id: &'a str,
}

impl Grabber<'_> {
    /// The keys of the campaign's pool `k`.
    fn pool_keys(&self, store: &Store, k: u32) -> PoolKeys {
        let prefix = &store.config().key_prefix;
        PoolKeys::new(prefix, self.campaign_id, self.facts.no, k, self.facts.pools)
    }
}

/// The answer to a grab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CouponGrabOutcome {
    /// A code is the caller's now.
    Grabbed {
        /// The code (uploaded, or generated: 18 characters).
        code: String,
        /// When it was issued, Unix ms (Redis `TIME`).
        grabbed_at_ms: i64,
        /// Until when it may be redeemed (exclusive), Unix ms.
        redeem_by_ms: i64,
    },
    /// The caller holds `per_user` codes already: these.
    AlreadyGrabbed {
        /// The caller's codes in the campaign, in the order issued.
        codes: Vec<String>,
    },
    /// No code is left in the whole campaign.
    SoldOut,
    /// A draw campaign before its draw: the caller is an entrant (now or before).
    Entered {
        /// When the draw happens, Unix ms (Redis `TIME`).
        draw_at_ms: i64,
    },
    /// A draw campaign after its draw: the caller did not win (or did not enter).
    NotDrawn,
    /// The campaign ended (Redis `TIME` at or past `ends_at`).
    Ended,
    /// The campaign has not started.
    NotStarted {
        /// Milliseconds until it starts (at least 1).
        retry_after_ms: u64,
    },
    /// Over the visit limit.
    RateLimited {
        /// Milliseconds until the window closes (at least 1).
        retry_after_ms: u64,
    },
    /// No such campaign.
    NotFound,
}
