//! Where a coupon code lives: the campaign and the pool that issued it, found from the code
//! alone (the checkout's hold, redeem and release name only the code).
//!
//! A generated code carries the campaign number and its index ([`parse`], then the campaign's
//! key inverts the index, which must be below the campaign's size: a guessed code fails
//! here); an uploaded one is looked up in the directory. The pool that issued it follows from
//! the index range, or from the code's hash. A merchant packet's share's code
//! (`<packet_id>.<share_id>`, [`parse_share_code`]) names its packet, whose meta hash and
//! coupons hash serve as the pool ([`crate::merchants::rules::coupons`]).

use crate::coupons::rules::checkout::IssuedRecord;
use crate::coupons::rules::{campaign_id, campaign_no, parse, pool_of_code, pool_of_index};
use crate::merchants::rules::{parse_share_code, CouponTerms, ShareCode};
use crate::packets::rules::Share;
use crate::store::keys::Keys;
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::facts::{facts, CampaignFacts};
use crate::coupons::keys::{directory, PoolKeys};

/// A code's issuing pool.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// The campaign's 5-character id (its keys' name); a share's coupon's packet id.
    pub campaign_id: String,
    /// The issuing pool's hash (a share's coupon: the packet's meta hash).
    pub pool: String,
    /// The issuing pool's issued codes (a share's coupon: the packet's coupons hash).
    pub issued: String,
    /// The money journal of the pool's tag.
    pub journal: String,
    /// The code as the pool keys it: the uploaded code, the generated index in decimal, or
    /// the share id.
    pub keyed: String,
    /// The campaign's facts (its discount among it); for a share's coupon, its terms.
    pub facts: CampaignFacts,
    /// A share's coupon's other keys; `None` for a campaign's code.
    pub share: Option<ShareKeys>,
}

/// The keys a share's coupon's checkout moves money in (on the packet's slot).
#[derive(Debug, Clone)]
pub(crate) struct ShareKeys {
    /// The packet's merchant (whose budget funds the coupon).
    pub merchant_id: String,
    /// The merchant's hash (its books).
    pub books: String,
    /// The packet's grabs hash (the coupon's value).
    pub grabs: String,
    /// The merchant's ledger list.
    pub ledger: String,
}

impl Located {
    fn of_pool(
        campaign_id: String,
        keys: PoolKeys,
        keyed: String,
        facts: CampaignFacts,
    ) -> Located {
        Located {
            campaign_id,
            pool: keys.pool,
            issued: keys.issued,
            journal: keys.journal,
            keyed,
            facts,
            share: None,
        }
    }

    /// The id the answers give: a campaign's public id ([`CampaignFacts::public_id`]), a share
    /// coupon's packet id.
    pub fn shown_id(&self) -> String {
        match &self.share {
            Some(_) => self.campaign_id.clone(),
            None => self.facts.public_id(),
        }
    }

    /// The share-coupon flag of the checkout scripts: `1` for a share's coupon, else empty.
    pub fn share_arg(&self) -> &'static str {
        if self.share.is_some() {
            "1"
        } else {
            ""
        }
    }

    /// The books, grabs and ledger keys of the checkout scripts: a share's coupon's, else the
    /// pool's hash for each (a key of the slot the scripts never touch).
    pub fn share_keys(&self) -> (&str, &str, &str) {
        match &self.share {
            Some(s) => (&s.books, &s.grabs, &s.ledger),
            None => (&self.pool, &self.pool, &self.pool),
        }
    }
}

/// The packet and coupon terms of share code `code`: `None` when the packet is gone or pays
/// out to wallets. The coupon's value (the discount) is its grabber's share, known once the
/// share is claimed as a coupon.
pub(super) async fn locate_share(
    store: &Store,
    conn: &mut Conn,
    code: &ShareCode,
) -> Result<Option<Located>, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let pk = keys.packet(&code.packet_id);
    type Fields = (
        Option<i64>,
        Option<i64>,
        Option<String>,
        Option<String>,
        Option<i64>,
    );
    let ((redeem_by, min_order, merchant, greeting, expires_at), record): (Fields, Option<String>) =
        redis::pipe()
            .cmd("HMGET")
            .arg(&pk.meta)
            .arg("redeem_by")
            .arg("min_order")
            .arg("merchant_id")
            .arg("greeting")
            .arg("expires_at")
            .cmd("HGET")
            .arg(&pk.coupons)
            .arg(&code.share_id)
            .query_async(conn)
            .await?;
    let (Some(redeem_by_ms), Some(merchant)) = (redeem_by, merchant) else {
        return Ok(None);
    };
    let value = match record {
        None => None,
        Some(r) => {
            let user = IssuedRecord::parse(&r)
                .map_err(|e| Error::Internal(e.to_string()))?
                .user_id;
            let share: Option<String> = redis::cmd("HGET")
                .arg(&pk.grabs)
                .arg(&user)
                .query_async(conn)
                .await?;
            share
                .map(|s| Share::parse(&s))
                .transpose()?
                .filter(|s| s.share_id.to_string() == code.share_id)
                .map(|s| s.amount_cents)
        }
    };
    let mk = keys.merchant(&merchant);
    let title = match greeting.filter(|g| !g.is_empty()) {
        Some(g) => g,
        None => format!("{merchant}'s red packet"),
    };
    Ok(Some(Located {
        campaign_id: code.packet_id.clone(),
        pool: pk.meta.clone(),
        issued: pk.coupons.clone(),
        journal: keys.journal_of_tag(&code.packet_id[..4]),
        keyed: code.share_id.clone(),
        facts: CampaignFacts {
            no: 0,
            pools: 1,
            key: None,
            redeem_by_ms,
            campaign_total: 0,
            title,
            ends_at_ms: expires_at.unwrap_or(redeem_by_ms),
            discount: value.map(|v| CouponTerms::discount(v, min_order)),
            gone: None,
            draw: None,
            tag: None,
        },
        share: Some(ShareKeys {
            merchant_id: merchant,
            books: mk.merchant,
            grabs: pk.grabs,
            ledger: mk.ledger,
        }),
    }))
}

/// Finds the pool that issued `code`: `None` for a code of no campaign.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a campaign
/// record of the wrong facts.
pub(crate) async fn locate(
    store: &Store,
    conn: &mut Conn,
    code: &str,
) -> Result<Option<Located>, Error> {
    if let Some(share) = parse_share_code(code) {
        return locate_share(store, conn, &share).await;
    }
    let prefix = &store.config().key_prefix;
    if let Some(parsed) = parse(code) {
        let id = campaign_id(parsed.campaign_no);
        if let Some(s) = facts(store, conn, &id, parsed.campaign_no).await? {
            if let Some(key) = &s.key {
                let index = key.unpermute(parsed.value);
                if index < s.campaign_total {
                    let pool = pool_of_index(index, s.campaign_total, s.pools);
                    let keys = PoolKeys::new(prefix, &id, parsed.campaign_no, pool, s.pools);
                    return Ok(Some(Located::of_pool(id, keys, index.to_string(), s)));
                }
            }
        }
    }
    let owner: Option<String> = redis::cmd("HGET")
        .arg(directory(prefix, code))
        .arg(code)
        .query_async(conn)
        .await?;
    // The owner is the campaign id, or `<campaign id>/<batch reference>` for an added batch.
    let id = owner.map(|o| o.split('/').next().unwrap_or_default().to_string());
    let Some((id, no)) = id.and_then(|id| campaign_no(&id).map(|no| (id, no))) else {
        return Ok(None);
    };
    let Some(s) = facts(store, conn, &id, no).await? else {
        return Ok(None);
    };
    let pool = pool_of_code(no, code, s.pools);
    let keys = PoolKeys::new(prefix, &id, no, pool, s.pools);
    Ok(Some(Located::of_pool(id, keys, code.to_string(), s)))
}

/// The discount argument of a checkout script: the discount of an order of `total` cents by
/// the campaign's rule ([`crate::coupons::rules::Discount::discount_cents`]), in decimal;
/// empty when no total is given, the campaign has no rule, or the total is below its minimum
/// (the script refuses that one itself, reading the minimum from the pool).
pub(super) fn discount_arg(facts: &CampaignFacts, total: Option<i64>) -> String {
    match (facts.discount, total) {
        (Some(rule), Some(total)) => rule
            .discount_cents(total)
            .map(|d| d.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// An order total as a script argument: decimal, or empty when not given.
pub(super) fn total_arg(total: Option<i64>) -> String {
    total.map(|t| t.to_string()).unwrap_or_default()
}

/// A discount field of a script's reply: empty (unknown) or cents.
///
/// # Errors
/// `()` for anything else (the caller names the reply).
pub(super) fn discount_of(text: &str) -> Result<Option<i64>, ()> {
    if text.is_empty() {
        Ok(None)
    } else {
        text.parse().map(Some).map_err(|_| ())
    }
}
