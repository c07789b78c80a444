//! `GET /packets/{id}`'s store step: one EVALSHA of `lua/packet_view.lua` (a consistent
//! snapshot of the packet), its reply parsed into [`ViewReply`] and built into a
//! [`PacketView`], and the access check of a targeted packet ([`view_as`]).

use std::collections::HashMap;

use redis::Value;

use crate::domain::packets::{best_luck, Grab, Packet, PacketView, Reveal, Share, Status};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::scripts::{int, script_call, text, texts, Call, PACKET_VIEW};
use crate::store::{Error, Store};

script_call! {
    /// `lua/packet_view.lua`: a consistent snapshot of a packet.
    pub struct PacketViewCall<'a> for PACKET_VIEW {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's grabs hash.
            grabs: &'a str,
            /// The packet's claims hash.
            claims: &'a str,
            /// The packet's recipients set (deleted once cancelled or settled).
            recipients: &'a str,
            /// The packet's share list (read once the packet is expired or settled).
            shares: &'a str,
        }
        ARGV {
            /// The viewer's user id, empty for none.
            viewer: &'a str,
        }
    }
}

/// `packet_view.lua`'s reply for a packet that exists: its hashes as maps, Redis `TIME`,
/// whether the viewer is a recipient, and the un-grabbed share amounts.
#[derive(Debug, Default)]
pub(crate) struct ViewReply {
    /// The meta hash.
    pub(crate) meta: HashMap<String, String>,
    /// The grabs hash: user -> share record.
    pub(crate) grabs: HashMap<String, String>,
    /// The claims hash: user -> claim state.
    pub(crate) claims: HashMap<String, String>,
    /// Redis `TIME`, Unix ms.
    pub(crate) now_ms: i64,
    /// Whether the viewer is one of the packet's recipients or grabbed a share of it (a
    /// cancelled or settled packet has dropped its recipients).
    pub(crate) recipient: bool,
    /// The un-grabbed share amounts, cents, in list order (only once the packet is expired or
    /// settled; else empty).
    pub(crate) ungrabbed: Vec<String>,
}

impl PacketViewCall<'_> {
    /// `packet_view.lua`'s reply: `None` for no such packet (an empty array).
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    pub(crate) fn reply(reply: Value) -> Result<Option<ViewReply>, Error> {
        let Value::Array(parts) = reply else {
            return Err(Error::bad_reply("packet_view", format!("{reply:?}")));
        };
        if parts.is_empty() {
            return Ok(None);
        }
        let mut parts = parts.into_iter();
        let mut next = || {
            parts
                .next()
                .ok_or_else(|| Error::bad_reply("packet_view", "short reply"))
        };
        let pairs = |v: Vec<String>| -> HashMap<String, String> {
            let mut m = HashMap::with_capacity(v.len() / 2);
            let mut it = v.into_iter();
            while let (Some(k), Some(val)) = (it.next(), it.next()) {
                m.insert(k, val);
            }
            m
        };
        let meta = pairs(texts("packet_view", next()?)?);
        let grabs = pairs(texts("packet_view", next()?)?);
        let claims = pairs(texts("packet_view", next()?)?);
        let now_ms: i64 = text("packet_view", next()?)?
            .parse()
            .map_err(|_| Error::bad_reply("packet_view", "time"))?;
        let recipient = int("packet_view", Some(&text("packet_view", next()?)?))? == 1;
        let ungrabbed = texts("packet_view", next()?)?;
        Ok(Some(ViewReply {
            meta,
            grabs,
            claims,
            now_ms,
            recipient,
            ungrabbed,
        }))
    }
}

/// Loads a packet's fields (no grabs).
///
/// # Errors
/// [`Error::Internal`] if it does not exist (callers use this right after creating it).
pub(crate) async fn load(store: &Store, packet_id: &str) -> Result<Packet, Error> {
    match view(store, packet_id).await? {
        Some(v) => Ok(v.packet),
        None => Err(Error::Internal(format!("packet {packet_id} vanished"))),
    }
}

/// Reads a consistent snapshot of a packet (one script), or `None` if there is no such packet
/// (including ids of the wrong shape). No access check: see [`view_as`].
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view(store: &Store, packet_id: &str) -> Result<Option<PacketView>, Error> {
    Ok(snapshot(store, packet_id, "").await?.map(|(v, _)| v))
}

/// What `viewer` may see of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ViewAs {
    /// The snapshot (boxed: a packet view is a few hundred bytes, the other answers none).
    Found(Box<PacketView>),
    /// No such packet.
    NotFound,
    /// A targeted packet, and `viewer` is neither its sender, nor one of its recipients, nor
    /// one of its grabbers.
    Forbidden,
}

/// [`view`] for `viewer`: a targeted packet is shown only to its sender, its recipients while
/// it takes grabs, and its grabbers; the check is part of the same snapshot script.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view_as(store: &Store, packet_id: &str, viewer: &str) -> Result<ViewAs, Error> {
    Ok(match snapshot(store, packet_id, viewer).await? {
        None => ViewAs::NotFound,
        Some((v, recipient)) => {
            if v.packet.recipient_count == 0 || recipient || v.packet.sender_id == viewer {
                ViewAs::Found(Box::new(v))
            } else {
                ViewAs::Forbidden
            }
        }
    })
}

/// The snapshot of `packet_id` and whether `viewer` is one of its recipients.
async fn snapshot(
    store: &Store,
    packet_id: &str,
    viewer: &str,
) -> Result<Option<(PacketView, bool)>, Error> {
    let Some(mut snap) = read(store, packet_id, viewer).await? else {
        return Ok(None);
    };
    // A draw packet whose draw is due: the view runs it, as a grab would, and shows its
    // result (docs/design.md, "Draws").
    if draw_due(&snap) {
        super::draw::run(store, packet_id).await?;
        match read(store, packet_id, viewer).await? {
            Some(again) => snap = again,
            None => return Ok(None),
        }
    }
    Ok(Some((build(packet_id, &snap)?, snap.recipient)))
}

/// Whether a snapshot is of a draw packet whose draw is due (Redis `TIME` at or past
/// `draw_at`) and not complete, neither cancelled nor settled.
fn draw_due(snap: &ViewReply) -> bool {
    let field = |k: &str| snap.meta.get(k).map(String::as_str);
    let due = field("draw_at")
        .and_then(|at| at.parse::<i64>().ok())
        .is_some_and(|at| snap.now_ms >= at);
    due && field("drawn_at").is_none() && !matches!(field("status"), Some("cancelled" | "settled"))
}

/// `lua/packet_view.lua`'s snapshot of `packet_id` as `viewer` (`""`: nobody) asks for it, as
/// the script answered it; `None` for no such packet (including ids of the wrong shape).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub(crate) async fn read(
    store: &Store,
    packet_id: &str,
    viewer: &str,
) -> Result<Option<ViewReply>, Error> {
    if !is_packet_id(packet_id) {
        return Ok(None);
    }
    let keys = Keys::new(&store.config().key_prefix).packet(packet_id);
    let mut conn = store.conn().await?;
    let reply: Value = PacketViewCall {
        meta: &keys.meta,
        grabs: &keys.grabs,
        claims: &keys.claims,
        recipients: &keys.recipients,
        shares: &keys.shares,
        viewer,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    PacketViewCall::reply(reply)
}

/// The [`PacketView`] of a snapshot [`read`]: the grabs in share-id order (checked to count
/// 1, 2, ... without a gap), the status at the script's Redis `TIME`, the best luck once every
/// share is grabbed, the reveal once no grab can change the packet.
///
/// # Errors
/// [`Error::Internal`] when a record does not parse or the share ids skip or repeat.
pub(crate) fn build(packet_id: &str, read: &ViewReply) -> Result<PacketView, Error> {
    let packet = Packet::from_fields(&read.meta)?;
    // Share ids count from 1 in grab order: they are the grab order.
    let mut list = Vec::with_capacity(read.grabs.len());
    for (user, record) in &read.grabs {
        list.push(Grab {
            share: Share::parse(record)?,
            claimed: read.claims.contains_key(user),
            user_id: user.clone(),
        });
    }
    list.sort_unstable_by_key(|g| g.share.share_id);
    if let Some((i, g)) = (1..).zip(&list).find(|(i, g)| g.share.share_id != *i) {
        return Err(Error::Internal(format!(
            "packet {packet_id}: grab records skip or repeat share id {i} (found {})",
            g.share.share_id
        )));
    }
    let status = Status::at(&packet, read.now_ms);
    let best_luck = if packet.grabbed_count >= packet.count {
        best_luck(&list)
    } else {
        None
    };
    let reveal = match (&packet.salt, status.reveals()) {
        (Some(salt), true) => reveal(packet_id, &packet, salt, &list, &read.ungrabbed),
        _ => None,
    };
    Ok(PacketView {
        packet,
        status,
        grabs: list,
        best_luck,
        reveal,
    })
}

/// The fairness receipt's reveal of a packet that no grab can change any more: the grabbed
/// shares in share-id order, then the un-grabbed ones in list order (the order they would have
/// been grabbed in), `count` in all. `None`, logged, when the records do not add up to `count`
/// shares (a packet settled by a release that deleted the share list at settlement): the view
/// still answers, without a reveal.
fn reveal(
    packet_id: &str,
    packet: &Packet,
    salt: &str,
    grabs: &[Grab],
    ungrabbed: &[String],
) -> Option<Reveal> {
    let mut shares_cents: Vec<i64> = grabs.iter().map(|g| g.share.amount_cents).collect();
    shares_cents.extend(ungrabbed.iter().filter_map(|a| a.parse::<i64>().ok()));
    if shares_cents.len() != packet.count as usize {
        tracing::warn!(
            packet_id,
            recorded = shares_cents.len(),
            count = packet.count,
            "the packet's shares do not add up to its count: no reveal"
        );
        return None;
    }
    Some(Reveal {
        salt: salt.to_string(),
        shares_cents,
    })
}
