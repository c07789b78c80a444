//! Merchant packets as pure rules: the red packet a merchant gives a customer to share after
//! an order (seed 000's scenario: "用户分享红包到微信群中。每一个用户只能领取一个红包"),
//! paid from the merchant's budget, one per (merchant, order). The request and its checks,
//! the order's fingerprint, and what a create answers. The atomic step is
//! `merchant_create_packet.lua`, called by `crate::merchants::create_packet`.

use serde::Deserialize;

use super::coupons::CouponTerms;
use crate::coupons::rules::is_reference;
use crate::domain::split::{LuckySplit, Mode};
use crate::domain::{is_merchant_id, MAX_MERCHANT_ID_CHARS};
use crate::domain::{is_user_id, Invalid, MAX_USER_ID_CHARS};
use crate::packets::rules::{NewPacket, Packet, PacketRequest, PacketRules};

/// How a merchant packet's claimed share is paid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(
    description = "How a merchant packet's claimed share is paid out: `wallet` (into the grabber's wallet, as a user's packet's share) or `coupon` (as a coupon of the grabber worth the share, `GET /coupons`, its code `<packet_id>.<share_id>`, redeemed at checkout through the coupon routes until the packet's `redeem_by`; never cash)."
)]
pub enum Payout {
    /// Into the grabber's wallet, as a user's packet's share is.
    Wallet,
    /// As a coupon of the grabber worth the share, redeemed at checkout until the packet's
    /// `redeem_by` ([`super::coupons`]); never cash.
    Coupon,
}

impl Payout {
    /// The stored and shown name.
    pub fn as_str(self) -> &'static str {
        match self {
            Payout::Wallet => "wallet",
            Payout::Coupon => "coupon",
        }
    }

    /// The payout named `s` ([`Payout::as_str`]).
    pub fn parse(s: &str) -> Option<Payout> {
        match s {
            "wallet" => Some(Payout::Wallet),
            "coupon" => Some(Payout::Coupon),
            _ => None,
        }
    }
}

/// The body of `POST /merchant-packets` (unknown fields are refused): the order, the sharer,
/// the payout, and the packet's fields with `POST /packets`'s rules; as the team's backend
/// sent it, before [`MerchantPacketRequest::check`]. Its field docs are the OpenAPI document's.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(
    description = "The body of `POST /merchant-packets` (unknown fields are refused): the order, the sharer,\nthe payout, and the packet's fields with `POST /packets`'s rules."
)]
#[schema(example = json!({"merchant_id": "shop-1042", "order_reference": "order-20261128-0042", "sharer_id": "carol", "total_cents": 2000, "count": 6, "payout": "wallet", "sharer_first": true, "expires_in_secs": 86400, "greeting": "Thanks for your order!"}))]
pub struct MerchantPacketRequest {
    /// Whose budget pays: 1 to 64 of `A-Z a-z 0-9 _ . : -`.
    #[schema(pattern = "^[A-Za-z0-9_.:-]{1,64}$")]
    pub merchant_id: String,
    /// The order: 1 to 128 bytes of printable ASCII without spaces. One packet per merchant
    /// and order: the same body again answers 201 and the same packet with `Idempotent-Replayed: true`, debited once; another
    /// body is 409 `order_reference_reused`.
    #[schema(pattern = "^[!-~]{1,128}$")]
    pub order_reference: String,
    /// The customer who shares the packet to their group: a user id, 1 to 255 printable
    /// characters.
    #[schema(min_length = 1, max_length = 255)]
    pub sharer_id: String,
    /// Total, cents (as `POST /packets`).
    #[schema(minimum = 1)]
    pub total_cents: i64,
    /// Number of shares (as `POST /packets`).
    #[schema(minimum = 1)]
    pub count: i64,
    /// `lucky` (default) or `fixed`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// The lucky split algorithm (default `double_mean`); lucky packets only.
    #[serde(default)]
    pub split: Option<LuckySplit>,
    /// Seconds until the packet expires (`1..=604800`, default 86400).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604_800)]
    pub expires_in_secs: Option<i64>,
    /// As `POST /packets`'s greeting.
    #[serde(default)]
    #[schema(max_length = 100)]
    pub greeting: Option<String>,
    /// As `POST /packets`'s cover.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,64}$")]
    pub cover: Option<String>,
    /// How claimed shares are paid out.
    pub payout: Payout,
    /// The coupons' terms: required with `payout: "coupon"`, refused with `"wallet"`.
    #[serde(default)]
    pub coupon: Option<CouponTerms>,
    /// Whether the sharer's own share is taken at creation (a group "fission" packet: the
    /// first share goes to the customer who shares it). Default `false`.
    #[serde(default)]
    pub sharer_first: bool,
}

/// A checked merchant packet request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMerchantPacket {
    /// Whose budget pays.
    pub merchant_id: String,
    /// The order (one packet per merchant and order).
    pub order_reference: String,
    /// The customer who shares it.
    pub sharer_id: String,
    /// The packet itself, checked by the red packets' rules (no recipients, no opening time,
    /// no password: a merchant packet is for whoever the sharer sends the link to).
    pub packet: NewPacket,
    /// How claimed shares are paid out.
    pub payout: Payout,
    /// The coupons' terms (`Some` exactly when `payout` is [`Payout::Coupon`]).
    pub coupon: Option<CouponTerms>,
    /// Whether the sharer's share is taken at creation.
    pub sharer_first: bool,
}

impl MerchantPacketRequest {
    /// Checks the request: the merchant, order and sharer ids, then the packet's fields by
    /// the red packets' own [`PacketRules::check`] (the same limits as `POST /packets`).
    ///
    /// # Errors
    /// [`Invalid`] naming the offending field.
    pub fn check(self, rules: &PacketRules) -> Result<NewMerchantPacket, Invalid> {
        if !is_merchant_id(&self.merchant_id) {
            return Err(Invalid(format!(
                "merchant_id must be 1 to {} of A-Z a-z 0-9 _ . : -",
                MAX_MERCHANT_ID_CHARS
            )));
        }
        if !is_reference(&self.order_reference) {
            return Err(Invalid::new(
                "order_reference must be 1 to 128 bytes of printable ASCII without spaces",
            ));
        }
        if !is_user_id(&self.sharer_id) {
            return Err(Invalid(format!(
                "sharer_id must be 1 to {MAX_USER_ID_CHARS} printable characters"
            )));
        }
        let packet = rules.check(PacketRequest {
            total_cents: self.total_cents,
            count: self.count,
            mode: self.mode,
            split: self.split,
            expires_in_secs: self.expires_in_secs,
            greeting: self.greeting,
            recipients: None,
            opens_in_secs: None,
            cover: self.cover,
            password: None,
            draw: None,
        })?;
        match (self.payout, &self.coupon) {
            (Payout::Coupon, None) => {
                return Err(Invalid::new(
                    "coupon (redeem_within_secs, min_order_cents) is required with payout coupon",
                ))
            }
            (Payout::Wallet, Some(_)) => {
                return Err(Invalid::new("coupon is only for payout coupon"))
            }
            (_, Some(terms)) => terms.check()?,
            (Payout::Wallet, None) => {}
        }
        Ok(NewMerchantPacket {
            merchant_id: self.merchant_id,
            order_reference: self.order_reference,
            sharer_id: self.sharer_id,
            packet,
            payout: self.payout,
            coupon: self.coupon,
            sharer_first: self.sharer_first,
        })
    }
}

impl NewMerchantPacket {
    /// The order's fingerprint, stored with the order so that the same body again finds its
    /// packet and another body under the same order is told apart (409
    /// `order_reference_reused`): `m1:` and the SHA-256 hex of the sharer, the payout, whether
    /// the sharer takes the first share, and the packet's own fingerprint
    /// ([`NewPacket::fingerprint`]), then for coupons their minimum order and redeem window,
    /// each a netstring (`<byte length>:<bytes>,`), so no field can pass for another. The
    /// merchant and the order are the record's key.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write;
        let mut canonical = String::new();
        let mut fields = vec![
            self.sharer_id.clone(),
            self.payout.as_str().to_string(),
            if self.sharer_first { "1" } else { "0" }.to_string(),
            self.packet.fingerprint(),
        ];
        if let Some(terms) = &self.coupon {
            fields.push(
                terms
                    .min_order_cents
                    .map_or(String::new(), |m| m.to_string()),
            );
            fields.push(terms.redeem_within_secs.to_string());
        }
        for field in &fields {
            let _ = write!(canonical, "{}:{},", field.len(), field);
        }
        let digest = Sha256::digest(canonical.as_bytes());
        let mut hex = String::with_capacity(67);
        hex.push_str("m1:");
        for b in digest {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }
}

/// Where a merchant packet came from: stored in its meta hash beside the packet's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MerchantOrigin {
    /// Whose budget paid.
    pub merchant_id: String,
    /// The customer who shares it.
    pub sharer_id: String,
    /// How claimed shares are paid out.
    pub payout: Payout,
    /// A coupon payout's terms: the minimum order (cents) and `redeem_by` (Unix ms).
    pub coupon: Option<IssuedTerms>,
    /// The order it belongs to (shown to the merchant only, never in the public view).
    pub order_reference: String,
}

/// The terms of a coupon packet's coupons as stored with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IssuedTerms {
    /// The smallest order total a coupon applies to, cents; `None`: any.
    pub min_order_cents: Option<i64>,
    /// Redeemable before this, Unix ms (the packet's `expires_at` plus
    /// `redeem_within_secs`).
    pub redeem_by_ms: i64,
}

/// What `POST /merchant-packets` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MerchantPacketOutcome {
    /// The packet was created now, the budget debited.
    Created {
        /// The packet.
        packet: Packet,
        /// The budget's balance after the debit, cents.
        balance_cents: i64,
    },
    /// The order had its packet already, from the same request: that packet, debited once.
    Repeat(Packet),
    /// The order has a packet from another request (`packet_id`); nothing written.
    OrderReferenceReused {
        /// The order's packet.
        packet_id: String,
    },
    /// The budget's balance is below the total; nothing written.
    InsufficientFunds {
        /// The balance, cents.
        balance_cents: i64,
    },
}

/// Where a page of a merchant's packets (`GET /merchants/{merchant_id}/packets`) starts:
/// after the packet `packet_id` created at `created_at_ms`, in the order (`created_at`,
/// packet id) descending. Shown as `<created_at_ms>-<packet_id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketsCursor {
    /// The last listed packet's `created_at`, Unix ms.
    pub created_at_ms: i64,
    /// The last listed packet.
    pub packet_id: String,
}

impl PacketsCursor {
    /// The cursor as a page's `next_cursor` shows it.
    pub fn text(&self) -> String {
        format!("{}-{}", self.created_at_ms, self.packet_id)
    }

    /// The cursor `text` ([`PacketsCursor::text`]): digits, `-`, 24 lowercase hex digits.
    pub fn parse(text: &str) -> Option<PacketsCursor> {
        let (at, id) = text.split_once('-')?;
        let ok = !at.is_empty()
            && at.len() <= 15
            && at.bytes().all(|b| b.is_ascii_digit())
            && id.len() == 24
            && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !ok {
            return None;
        }
        Some(PacketsCursor {
            created_at_ms: at.parse().ok()?,
            packet_id: id.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> MerchantPacketRequest {
        serde_json::from_value(serde_json::json!({
            "merchant_id": "shop-1042", "order_reference": "order-1", "sharer_id": "carol",
            "total_cents": 2000, "count": 6, "payout": "wallet"
        }))
        .unwrap()
    }

    #[test]
    fn a_request_is_checked_by_the_packet_rules_and_its_own_ids() {
        let rules = PacketRules::default();
        let new = request().check(&rules).unwrap();
        assert_eq!((new.packet.total_cents, new.packet.count), (2000, 6));
        assert!(!new.sharer_first);
        for (field, value) in [
            ("merchant_id", serde_json::json!("a b")),
            ("order_reference", serde_json::json!("has space")),
            ("order_reference", serde_json::json!("x".repeat(129))),
            ("sharer_id", serde_json::json!("")),
            ("total_cents", serde_json::json!(5)),
        ] {
            let mut v = serde_json::to_value(serde_json::json!({
                "merchant_id": "shop-1042", "order_reference": "order-1", "sharer_id": "carol",
                "total_cents": 2000, "count": 6, "payout": "wallet"
            }))
            .unwrap();
            v[field] = value;
            let req: MerchantPacketRequest = serde_json::from_value(v).unwrap();
            assert!(req.check(&rules).is_err(), "{field}");
        }
    }

    #[test]
    fn a_coupon_payout_needs_its_terms_and_a_wallet_payout_refuses_them() {
        let rules = PacketRules::default();
        let with = |payout: &str, coupon: Option<serde_json::Value>| {
            let mut v = serde_json::json!({
                "merchant_id": "shop-1042", "order_reference": "order-1", "sharer_id": "carol",
                "total_cents": 2000, "count": 6, "payout": payout
            });
            if let Some(c) = coupon {
                v["coupon"] = c;
            }
            serde_json::from_value::<MerchantPacketRequest>(v)
                .unwrap()
                .check(&rules)
        };
        let terms = serde_json::json!({"redeem_within_secs": 3600, "min_order_cents": 5000});
        let made = with("coupon", Some(terms.clone())).unwrap();
        assert_eq!(
            made.coupon,
            Some(CouponTerms {
                min_order_cents: Some(5000),
                redeem_within_secs: 3600
            })
        );
        assert!(with("coupon", None).is_err());
        assert!(with("wallet", Some(terms)).is_err());
        assert!(with("coupon", Some(serde_json::json!({"redeem_within_secs": 0}))).is_err());
    }

    /// The fingerprint of [`request`] as recorded before coupon payouts existed.
    const PINNED_WALLET_FINGERPRINT: &str =
        "m1:a9a3a818eb33d8bdb883b598ca620073392d2ecb9ed7533044e7e665642d7a44";

    #[test]
    fn a_wallet_payouts_fingerprint_is_what_it_was_before_coupons() {
        // Orders recorded before coupon payouts existed must still find their packet.
        let fp = request()
            .check(&PacketRules::default())
            .unwrap()
            .fingerprint();
        assert_eq!(fp, PINNED_WALLET_FINGERPRINT);
    }

    #[test]
    fn cursors_read_back_what_they_show() {
        let c = PacketsCursor {
            created_at_ms: 1_795_887_015_772,
            packet_id: "14f19750de2d840759a4c115".into(),
        };
        assert_eq!(PacketsCursor::parse(&c.text()), Some(c));
        for bad in [
            "",
            "-",
            "12-",
            "x-14f19750de2d840759a4c115",
            "1-14F19750DE2D840759A4C115",
        ] {
            assert_eq!(PacketsCursor::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_fingerprint_tells_every_field_apart() {
        let rules = PacketRules::default();
        let base = request().check(&rules).unwrap();
        assert_eq!(
            base.fingerprint(),
            request().check(&rules).unwrap().fingerprint()
        );
        assert!(base.fingerprint().starts_with("m1:"));
        let changed = [
            NewMerchantPacket {
                sharer_id: "dave".into(),
                ..base.clone()
            },
            NewMerchantPacket {
                sharer_first: true,
                ..base.clone()
            },
            NewMerchantPacket {
                payout: Payout::Coupon,
                coupon: Some(CouponTerms {
                    min_order_cents: None,
                    redeem_within_secs: 60,
                }),
                ..base.clone()
            },
            NewMerchantPacket {
                packet: NewPacket {
                    total_cents: 2001,
                    ..base.packet.clone()
                },
                ..base.clone()
            },
        ];
        for other in changed {
            assert_ne!(base.fingerprint(), other.fingerprint(), "{other:?}");
        }
    }
}
