//! What a sandbox keeps of a campaign (its pools, code key, redeem-by, size and discount: fixed
//! once it is created), and whether it has seen it sold out or ended.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::coupons::rules::{campaign_id, parse_public_id, public_id, CodeKey, Discount};
use crate::store::Conn;
use crate::store::{Error, Store};

use crate::coupons::keys::PoolKeys;

/// What this sandbox keeps of a campaign: fixed once it is created.
#[derive(Debug, Clone)]
pub(crate) struct CampaignFacts {
    /// The campaign's number.
    pub no: u64,
    /// The campaign's pools.
    pub pools: u32,
    /// Its code key (generated codes).
    pub key: Option<CodeKey>,
    /// Until when its coupons may be redeemed, Unix ms.
    pub redeem_by_ms: i64,
    /// Its codes at creation (generated: every index is below).
    pub campaign_total: u64,
    /// Its title.
    pub title: String,
    /// When grabbing ends (exclusive), Unix ms.
    pub ends_at_ms: i64,
    /// What its coupons take off an order (`None`: no value recorded).
    pub discount: Option<Discount>,
    /// Sold out or ended, as this sandbox saw it (final states).
    pub gone: Option<Gone>,
    /// A draw campaign's draw (`None`: first come, first served).
    pub draw: Option<DrawFacts>,
    /// Its id tag (`None`: a campaign created before tags, known by its number alone).
    pub tag: Option<String>,
}

impl CampaignFacts {
    /// The campaign's public id: its number's 5 characters and its tag
    /// ([`crate::coupons::rules::public_id`]).
    pub(crate) fn public_id(&self) -> String {
        public_id(self.no, self.tag.as_deref())
    }
}

/// The public id of campaign number `no` ([`CampaignFacts::public_id`]); `None`: no such campaign.
///
/// # Errors
/// As [`facts`]'s.
pub(crate) async fn public_id_of(
    store: &Store,
    conn: &mut Conn,
    no: u64,
) -> Result<Option<String>, Error> {
    Ok(facts(store, conn, &campaign_id(no), no)
        .await?
        .map(|s| s.public_id()))
}

/// A campaign's public id (as the API takes it) resolved: its 5-character id (the name its
/// keys use), its number and its facts. `None` for an id of no campaign, for a wrong tag, and
/// for the bare 5-character id of a campaign created with a tag: its number, which counts up,
/// does not find it (so the next campaign's id cannot be guessed).
///
/// # Errors
/// As [`facts`]'s.
pub(crate) async fn resolve(
    store: &Store,
    conn: &mut Conn,
    public: &str,
) -> Result<Option<(String, u64, CampaignFacts)>, Error> {
    let Some((no, tag)) = parse_public_id(public) else {
        return Ok(None);
    };
    let id = campaign_id(no);
    let Some(s) = facts(store, conn, &id, no).await? else {
        return Ok(None);
    };
    let same = match (tag, s.tag.as_deref()) {
        (None, None) => true,
        // Every byte compared, whatever the first difference.
        (Some(given), Some(kept)) => {
            given.len() == kept.len()
                && given
                    .bytes()
                    .zip(kept.bytes())
                    .fold(0u8, |d, (a, b)| d | (a ^ b))
                    == 0
        }
        _ => false,
    };
    Ok(same.then_some((id, no, s)))
}

/// What a sandbox keeps of a draw campaign's draw: fixed at creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DrawFacts {
    /// When entries close and the draw is due, Unix ms.
    pub draw_at_ms: i64,
    /// The seed (64 lowercase hex digits; secret until the draw, never answered before it).
    pub seed: String,
    /// Its commitment, published from creation.
    pub commitment: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gone {
    /// Every pool was empty.
    SoldOut,
    /// Redis `TIME` passed `ends_at`.
    Ended,
}

/// Campaign shapes by (Redis URL, campaign id).
static SHAPES: Mutex<Option<HashMap<(String, String), CampaignFacts>>> = Mutex::new(None);

/// How many campaign shapes a sandbox keeps.
const KEPT_SHAPES: usize = 256;

impl CampaignFacts {
    /// The code an item of the campaign names (`<pool>/<code or index>`); `None` for a
    /// reservation (`?<id>`) or a malformed item.
    pub(super) fn code_of(&self, item: &str) -> Option<String> {
        let (_, code) = item.split_once('/')?;
        match &self.key {
            Some(key) => code
                .parse::<u64>()
                .ok()
                .map(|index| key.code(self.no, index)),
            None => Some(code.to_string()),
        }
    }
}

fn shape_of(url: &str, id: &str) -> Option<CampaignFacts> {
    let shapes = SHAPES.lock().unwrap_or_else(|e| e.into_inner());
    shapes
        .as_ref()?
        .get(&(url.to_string(), id.to_string()))
        .cloned()
}

fn keep_shape(url: &str, id: &str, facts: CampaignFacts) {
    let mut shapes = SHAPES.lock().unwrap_or_else(|e| e.into_inner());
    let map = shapes.get_or_insert_with(HashMap::new);
    if map.len() >= KEPT_SHAPES {
        map.clear();
    }
    map.insert((url.to_string(), id.to_string()), facts);
}

pub(super) fn remember_gone(url: &str, id: &str, gone: Gone) {
    if let Some(mut facts) = shape_of(url, id) {
        facts.gone = Some(gone);
        keep_shape(url, id, facts);
    }
}

/// The facts of campaign `id` (number `no`): from this sandbox's memory, else pool 0's hash
/// (pool 0's hash tag does not depend on the number of pools). `None`: no such campaign.
pub(super) async fn facts(
    store: &Store,
    conn: &mut Conn,
    id: &str,
    no: u64,
) -> Result<Option<CampaignFacts>, Error> {
    let url = &store.config().redis_url;
    if let Some(facts) = shape_of(url, id) {
        return Ok(Some(facts));
    }
    let keys = PoolKeys::new(&store.config().key_prefix, id, no, 0, 1);
    type Fields = (
        Option<u32>,
        Option<String>,
        Option<i64>,
        Option<u64>,
        Option<String>,
        Option<i64>,
        // The discount: amount_off, percent_off, max_off, min_order.
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    // The draw: draw_at, draw_seed, draw_commitment; and the id tag.
    type DrawFields = (Option<i64>, Option<String>, Option<String>, Option<String>);
    let ((pools, secret, redeem_by, total, title, ends, amount, percent, max, min), drawn): (
        Fields,
        DrawFields,
    ) = redis::pipe()
        .cmd("HMGET")
        .arg(&keys.pool)
        .arg("pools")
        .arg("secret")
        .arg("redeem_by")
        .arg("campaign_total")
        .arg("title")
        .arg("ends_at")
        .arg("amount_off")
        .arg("percent_off")
        .arg("max_off")
        .arg("min_order")
        .cmd("HMGET")
        .arg(&keys.pool)
        .arg(&["draw_at", "draw_seed", "draw_commitment", "id_tag"])
        .query_async(conn)
        .await?;
    let (Some(pools), Some(redeem_by_ms), Some(campaign_total), Some(title), Some(ends_at_ms)) =
        (pools, redeem_by, total, title, ends)
    else {
        return Ok(None);
    };
    let key = match secret {
        Some(s) => Some(CodeKey::new(&s)?),
        None => None,
    };
    let discount = Discount::from_fields(
        amount.as_deref(),
        percent.as_deref(),
        max.as_deref(),
        min.as_deref(),
    )
    .map_err(|e| Error::Internal(format!("coupon campaign {id}: {e}")))?;
    let (draw_at, draw_seed, draw_commitment, tag) = drawn;
    let draw = match (draw_at, draw_seed, draw_commitment) {
        (None, _, _) => None,
        (Some(draw_at_ms), Some(seed), Some(commitment)) => Some(DrawFacts {
            draw_at_ms,
            seed,
            commitment,
        }),
        _ => {
            return Err(Error::Internal(format!(
                "coupon campaign {id}: pool 0 has a draw_at without its seed"
            )))
        }
    };
    let facts = CampaignFacts {
        draw,
        tag,
        no,
        pools,
        key,
        redeem_by_ms,
        campaign_total,
        title,
        ends_at_ms,
        discount,
        gone: None,
    };
    keep_shape(url, id, facts.clone());
    Ok(Some(facts))
}
