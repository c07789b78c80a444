//! The calls of the coupon-drop scripts (see [`super::Call`]). Every key of a call is on one
//! pool's hash tag.

use super::{
    COUPON_ADD_CODES, COUPON_CLOSE, COUPON_CREATE, COUPON_CREATE_POOL, COUPON_GRAB, COUPON_REDEEM,
    COUPON_SETTLE, COUPON_TAKE,
};

script_call! {
    /// `lua/coupon_create.lua`: record a new campaign under its merchant reference, once, and
    /// give it its number. Every key has the tag `{coupon}`.
    pub struct CouponCreateCall<'a> for COUPON_CREATE {
        KEYS {
            /// The campaigns by merchant reference (hash).
            refs: &'a str,
            /// The last campaign number.
            seq: &'a str,
            /// The campaigns to close, by end (sorted set).
            ends: &'a str,
        }
        ARGV {
            /// The merchant's reference of the creation.
            reference: &'a str,
            /// The request's fingerprint.
            fingerprint: &'a str,
            /// When grabbing opens, Unix ms in decimal; empty: when the campaign is recorded
            /// (Redis `TIME`).
            starts_at_ms: &'a str,
            /// When grabbing ends (exclusive), Unix ms.
            ends_at_ms: i64,
            /// A fresh code secret (32 hex digits), stored if the campaign is new.
            secret: &'a str,
            /// The largest campaign number.
            max_campaign_no: u64,
            /// The longest campaign, ms: `ends_at` is at most this after the start (the
            /// creation's Redis `TIME` when no start is given).
            max_campaign_ms: i64,
        }
    }
}

script_call! {
    /// `lua/coupon_create_pool.lua`: write one pool of a new campaign, once.
    pub struct CouponCreatePoolCall<'a> for COUPON_CREATE_POOL {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
        }
        ARGV {
            /// The creating request's fingerprint.
            fingerprint: &'a str,
            /// The campaign's title.
            title: &'a str,
            /// When grabbing opens, Unix ms.
            starts_at_ms: i64,
            /// When grabbing ends (exclusive), Unix ms.
            ends_at_ms: i64,
            /// Until when an issued coupon may be redeemed (exclusive), Unix ms.
            redeem_by_ms: i64,
            /// Codes one user may grab from the campaign.
            per_user: u32,
            /// The campaign's number of pools.
            pools: u32,
            /// `uploaded` or `generated`.
            kind: &'a str,
            /// Generated: the pool's first index (0 for uploaded codes).
            first_index: u64,
            /// Generated: the pool's end index, exclusive (0 for uploaded codes).
            end_index: u64,
            /// Generated: the campaign's code secret, 32 hex digits (empty for uploaded).
            secret: &'a str,
            /// The campaign's codes at its creation (all pools).
            campaign_total: u64,
            /// Uploaded: the pool's codes (none for generated).
            batch: &'a [&'a str],
        }
    }
}

script_call! {
    /// `lua/coupon_grab.lua`: a code of the caller's home pool, at most `per_user` per user.
    pub struct CouponGrabCall<'a> for COUPON_GRAB {
        KEYS {
            /// The home pool's hash.
            pool: &'a str,
            /// The home pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The home pool's issued codes (hash).
            issued: &'a str,
            /// The home pool's users and their items (hash).
            holders: &'a str,
            /// The caller's visit counter in the campaign.
            rate: &'a str,
            /// The home pool's open reservations (hash).
            pending: &'a str,
            /// The home pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// The caller.
            user_id: &'a str,
            /// The home pool's number.
            home: u32,
            /// Visits allowed per window (0: unlimited).
            rate_limit: u32,
            /// The visit window, ms.
            rate_window_ms: u64,
            /// A fresh id of this call (16 hex digits): the reservation's if the home pool is
            /// empty, and the call id a win is recorded under (a re-run answers the same win).
            reservation: &'a str,
            /// The campaign (journal entries name it).
            campaign_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/coupon_redeem.lua`: redeem an issued coupon once, on the pool that issued it.
    pub struct CouponRedeemCall<'a> for COUPON_REDEEM {
        KEYS {
            /// The issuing pool's hash.
            pool: &'a str,
            /// The issuing pool's issued codes (hash).
            issued: &'a str,
            /// The issuing pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// The code as the pool keys it: the uploaded code, or the generated index.
            code: &'a str,
            /// The user the checkout names.
            user_id: &'a str,
            /// The order redeeming the coupon.
            order_reference: &'a str,
            /// The campaign (journal entries name it).
            campaign_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/coupon_take.lua`: one code of another pool for a reservation, at most once.
    pub struct CouponTakeCall<'a> for COUPON_TAKE {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's issued codes (hash).
            issued: &'a str,
            /// The pool's codes taken for reservations (hash).
            loans: &'a str,
            /// The pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// The user the reservation is for.
            user_id: &'a str,
            /// The reservation id.
            reservation: &'a str,
            /// The pool's number.
            pool_no: u32,
            /// The campaign (journal entries name it).
            campaign_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/coupon_settle.lua`: close a reservation in the user's home pool.
    pub struct CouponSettleCall<'a> for COUPON_SETTLE {
        KEYS {
            /// The home pool's users and their items (hash).
            holders: &'a str,
            /// The home pool's open reservations (hash).
            pending: &'a str,
        }
        ARGV {
            /// The user the reservation is for.
            user_id: &'a str,
            /// The reservation id.
            reservation: &'a str,
            /// The item taken for it, or empty when no pool had a code left.
            item: &'a str,
            /// When the item was taken, Unix ms in decimal (empty with no item).
            grabbed_at_ms: &'a str,
        }
    }
}

script_call! {
    /// `lua/coupon_add_codes.lua`: one pool's share of a batch of uploaded codes, once per
    /// batch reference.
    pub struct CouponAddCodesCall<'a> for COUPON_ADD_CODES {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's batches (hash).
            batches: &'a str,
        }
        ARGV {
            /// The batch's reference.
            reference: &'a str,
            /// The batch's fingerprint.
            fingerprint: &'a str,
            /// The pool's codes of the batch.
            batch: &'a [&'a str],
        }
    }
}

script_call! {
    /// `lua/coupon_close.lua`: close one pool of an ended campaign once (pool 0, last, also
    /// reports the campaign's end in the journal).
    pub struct CouponCloseCall<'a> for COUPON_CLOSE {
        KEYS {
            /// The pool's hash.
            pool: &'a str,
            /// The pool's un-issued uploaded codes (list).
            codes: &'a str,
            /// The pool's issued codes (hash).
            issued: &'a str,
            /// The pool's users and their items (hash).
            holders: &'a str,
            /// The pool's open reservations (hash).
            pending: &'a str,
            /// The pool's codes taken for reservations (hash).
            loans: &'a str,
            /// The pool's batches (hash).
            batches: &'a str,
            /// The pool's tag's journal (stream).
            journal: &'a str,
        }
        ARGV {
            /// When the pool's keys expire, Unix ms.
            keep_until_ms: i64,
            /// The campaign.
            campaign_id: &'a str,
            /// `1` on pool 0 (report the campaign's end), empty on the others.
            report: &'a str,
            /// Pool 0: the other pools' counts, `<issued>|<redeemed>|<never_issued>`.
            others: &'a str,
        }
    }
}
