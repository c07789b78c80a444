//! What a coupon grab's steps share: the grabber (`Grabber`) and the grab's answer
//! ([`CouponGrabOutcome`]).

use crate::coupons::facts::CampaignFacts;
use crate::coupons::keys::PoolKeys;
use crate::store::Store;

/// A user of a campaign, as the steps of a reservation need them: the campaign (id and facts)
/// and the user's home pool.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Grabber<'a> {
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
    pub(crate) fn pool_keys(&self, store: &Store, k: u32) -> PoolKeys {
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
