//! `GET /packets/{id}`'s store step: one EVALSHA of `packet_view.lua` (a consistent
//! snapshot of the packet), its reply parsed into `ViewReply` and built into a
//! [`PacketView`], and the access check of a targeted packet ([`view_as`]).

use crate::store::scripts::PacketViewCall;
use std::collections::HashMap;

use redis::Value;

use crate::packets::rules::{
    best_luck, next_page, Grab, Packet, PacketView, Reveal, Share, Status, GRABS_PAGE,
};
use crate::store::keys::{is_packet_id, Keys};
use crate::store::scripts::{int, text, texts, Call};
use crate::store::{Error, Store};

/// One grab of a page as `packet_view.lua` answers it.
#[derive(Debug, Default, Clone)]
pub(crate) struct PageGrab {
    /// The grabber.
    pub(crate) user: String,
    /// Their share record (`domain::packets::Share`).
    pub(crate) record: String,
    /// Their claim state (`domain::packets::ClaimState`), empty when unclaimed.
    pub(crate) claim: String,
}

/// `packet_view.lua`'s reply for a packet that exists: its meta hash, Redis `TIME`, whether
/// the viewer is a recipient, the viewer's grab, a page of grabs and the page's un-grabbed
/// share amounts.
#[derive(Debug, Default)]
pub(crate) struct ViewReply {
    /// The meta hash.
    pub(crate) meta: HashMap<String, String>,
    /// Redis `TIME`, Unix ms.
    pub(crate) now_ms: i64,
    /// Whether the viewer is one of the packet's recipients or grabbed a share of it (a
    /// cancelled or settled packet has dropped its recipients).
    pub(crate) recipient: bool,
    /// The viewer's grab: (share record, claim state, empty when unclaimed).
    pub(crate) mine: Option<(String, String)>,
    /// The page's grabs in share-id order; or, when `every` is set, every grab of the packet
    /// in no order (a packet grabbed before the order list was kept).
    pub(crate) page: Vec<PageGrab>,
    /// Whether `page` holds every grab rather than the page's.
    pub(crate) every: bool,
    /// The un-grabbed share amounts, cents, of the page's positions (only once the packet is
    /// expired, cancelled or settled; else empty).
    pub(crate) ungrabbed: Vec<String>,
}

impl PacketViewCall<'_> {
    /// `packet_view.lua`'s reply: `None` for no such packet (an empty array).
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    pub(crate) fn reply(reply: Value) -> Result<Option<ViewReply>, Error> {
        const SCRIPT: &str = "packet_view";
        let Value::Array(parts) = reply else {
            return Err(Error::bad_reply(SCRIPT, format!("{reply:?}")));
        };
        if parts.is_empty() {
            return Ok(None);
        }
        let mut parts = parts.into_iter();
        let mut next = || {
            parts
                .next()
                .ok_or_else(|| Error::bad_reply(SCRIPT, "short reply"))
        };
        let meta = pairs(texts(SCRIPT, next()?)?);
        let now_ms: i64 = text(SCRIPT, next()?)?
            .parse()
            .map_err(|_| Error::bad_reply(SCRIPT, "time"))?;
        let recipient = int(SCRIPT, Some(&text(SCRIPT, next()?)?))? == 1;
        let mine = match texts(SCRIPT, next()?)?.as_slice() {
            [] => None,
            [record, claim] => Some((record.clone(), claim.clone())),
            other => return Err(Error::bad_reply(SCRIPT, format!("mine: {other:?}"))),
        };
        let users = texts(SCRIPT, next()?)?;
        let records = texts(SCRIPT, next()?)?;
        let claims = texts(SCRIPT, next()?)?;
        let ungrabbed = texts(SCRIPT, next()?)?;
        let every_grab = pairs(texts(SCRIPT, next()?)?);
        let mut every_claim = pairs(texts(SCRIPT, next()?)?);
        if records.len() != users.len() || claims.len() != users.len() {
            return Err(Error::bad_reply(SCRIPT, "page lengths differ"));
        }
        let every = !every_grab.is_empty();
        let page = if every {
            every_grab
                .into_iter()
                .map(|(user, record)| PageGrab {
                    claim: every_claim.remove(&user).unwrap_or_default(),
                    user,
                    record,
                })
                .collect()
        } else {
            users
                .into_iter()
                .zip(records)
                .zip(claims)
                .map(|((user, record), claim)| PageGrab {
                    user,
                    record,
                    claim,
                })
                .collect()
        };
        Ok(Some(ViewReply {
            meta,
            now_ms,
            recipient,
            mine,
            page,
            every,
            ungrabbed,
        }))
    }
}

/// A flat `HGETALL` reply as a map.
fn pairs(flat: Vec<String>) -> HashMap<String, String> {
    let mut m = HashMap::with_capacity(flat.len() / 2);
    let mut it = flat.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        m.insert(k, v);
    }
    m
}

/// Loads a packet's fields (no grabs).
///
/// # Errors
/// [`Error::Internal`] if it does not exist (callers use this right after creating it).
pub(crate) async fn load(store: &Store, packet_id: &str) -> Result<Packet, Error> {
    match summary(store, packet_id).await? {
        Some(v) => Ok(v.packet),
        None => Err(Error::Internal(format!("packet {packet_id} vanished"))),
    }
}

/// A packet's snapshot without grabs (no page: O(1) whatever its size), or `None` if there
/// is no such packet. No access check.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn summary(store: &Store, packet_id: &str) -> Result<Option<PacketView>, Error> {
    Ok(snapshot(store, packet_id, "", 1, 0).await?.map(|(v, _)| v))
}

/// [`summary`] of each of `packet_ids` (`None` for one that does not exist), in their order:
/// one pipeline of their meta hashes and Redis `TIME`, the read `packet_view.lua` makes
/// without a page, without a script call per packet (a page of a merchant's 100 packets is
/// then about 100 `HGETALL`s of tens of fields). A draw packet whose draw is due is read
/// through [`summary`], which runs the draw first. The ids should share a hash slot (a
/// merchant's packets do): on a cluster, `TIME` is asked of their node.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a meta hash
/// that does not parse.
pub async fn summaries(
    store: &Store,
    packet_ids: &[String],
) -> Result<Vec<Option<PacketView>>, Error> {
    let keys = Keys::new(&store.config().key_prefix);
    let valid: Vec<&String> = packet_ids.iter().filter(|id| is_packet_id(id)).collect();
    if valid.is_empty() {
        return Ok(vec![None; packet_ids.len()]);
    }
    let mut pipe = redis::pipe();
    for id in &valid {
        pipe.cmd("HGETALL").arg(keys.packet(id).meta);
    }
    pipe.cmd("TIME");
    let mut conn = store.conn().await?;
    let mut replies: Vec<Value> = pipe.query_async(&mut conn).await?;
    let (secs, micros): (i64, i64) = redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))
        .map_err(|e| Error::bad_reply("TIME", e.to_string()))?;
    let now_ms = secs * 1_000 + micros / 1_000;
    let mut metas: HashMap<&str, HashMap<String, String>> = HashMap::new();
    for (id, reply) in valid.iter().zip(replies) {
        let flat: Vec<String> = redis::from_redis_value(reply)
            .map_err(|e| Error::bad_reply("HGETALL", e.to_string()))?;
        if !flat.is_empty() {
            metas.insert(id.as_str(), pairs(flat));
        }
    }
    let mut out = Vec::with_capacity(packet_ids.len());
    for id in packet_ids {
        let Some(meta) = metas.remove(id.as_str()) else {
            out.push(None);
            continue;
        };
        let read = ViewReply {
            meta,
            now_ms,
            recipient: false,
            mine: None,
            page: Vec::new(),
            every: false,
            ungrabbed: Vec::new(),
        };
        out.push(if draw_due(&read) {
            summary(store, id).await?
        } else {
            Some(build(id, "", &read, 1, 0)?)
        });
    }
    Ok(out)
}

/// Every grab of a packet and, once it reveals, every share: the pages of
/// [`GRABS_PAGE`] positions read one script call each (none holds the server longer than a
/// page), joined; or `None` if there is no such packet (including ids of the wrong shape).
/// No access check. Grabs only ever append, so the pages join into the grabs of the last
/// page's snapshot; the packet's fields, status and best luck are the last page's. A packet
/// that began to reveal its shares between pages is read again from its first page.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view(store: &Store, packet_id: &str) -> Result<Option<PacketView>, Error> {
    Ok(read_all(store, packet_id).await?.map(|w| w.view))
}

/// A packet as [`read_all`] joins its pages, or one page of it ([`read_page`]).
#[derive(Debug)]
pub(crate) struct PacketRead {
    /// [`view`]'s answer, or the page's.
    pub(crate) view: PacketView,
    /// Every grabber's (or the page's grabbers') claim state as the pages read it (user ->
    /// claim state, `domain::packets::ClaimState`; absent when unclaimed).
    pub(crate) claims: HashMap<String, String>,
    /// The meta hash as the last page read it.
    pub(crate) meta: HashMap<String, String>,
}

/// The page of [`GRABS_PAGE`] positions from share id `from` as nobody in particular sees it
/// (its sender's view, without the viewer's own grab), with the page's grabbers' claim states
/// and the meta hash ([`PacketRead`]): one script call, bounded by the page.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub(crate) async fn read_page(
    store: &Store,
    packet_id: &str,
    from: u32,
) -> Result<Option<PacketRead>, Error> {
    let Some((snap, view)) = snapshot_reply(store, packet_id, "", from, GRABS_PAGE).await? else {
        return Ok(None);
    };
    let claims = snap
        .page
        .iter()
        .filter(|g| !g.claim.is_empty())
        .map(|g| (g.user.clone(), g.claim.clone()))
        .collect();
    Ok(Some(PacketRead {
        view,
        claims,
        meta: snap.meta,
    }))
}

/// [`view`] with every grabber's claim state and the meta hash ([`PacketRead`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached; [`Error::Internal`] for a record that
/// does not parse.
pub(crate) async fn read_all(store: &Store, packet_id: &str) -> Result<Option<PacketRead>, Error> {
    'again: loop {
        let mut from = 1;
        let mut joined: Option<PacketView> = None;
        let mut claims = HashMap::new();
        loop {
            let Some((snap, mut page)) =
                snapshot_reply(store, packet_id, "", from, GRABS_PAGE).await?
            else {
                return Ok(None);
            };
            for g in snap.page.iter().filter(|g| !g.claim.is_empty()) {
                claims.insert(g.user.clone(), g.claim.clone());
            }
            if let Some(all) = joined.as_mut() {
                // Revealing is for good (no status goes back), so this restarts once at most.
                if !all.status.reveals() && page.status.reveals() {
                    continue 'again;
                }
                all.grabs.append(&mut page.grabs);
                all.reveal = match (all.reveal.take(), page.reveal.take()) {
                    (Some(mut r), Some(p)) => {
                        r.shares_cents.extend(p.shares_cents);
                        Some(r)
                    }
                    _ => None,
                };
                all.packet = page.packet;
                all.status = page.status;
                all.best_luck = page.best_luck;
                all.next_cursor = page.next_cursor;
            } else {
                joined = Some(page);
            }
            let all = joined.as_mut().expect("set above");
            match all.next_cursor {
                Some(next) => from = next,
                None => {
                    return Ok(Some(PacketRead {
                        view: joined.expect("set above"),
                        claims,
                        meta: snap.meta,
                    }))
                }
            }
        }
    }
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

/// The page of a packet's grabs (and, once it reveals, shares) from share id `from`
/// ([`GRABS_PAGE`] positions), as `viewer` may see it: a targeted packet is shown only to
/// its sender, its recipients while it takes grabs, and its grabbers; the check is part of
/// the same snapshot script. Its Redis time is bounded by the page whatever the packet's
/// size.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub async fn view_as(
    store: &Store,
    packet_id: &str,
    viewer: &str,
    from: u32,
) -> Result<ViewAs, Error> {
    Ok(
        match snapshot(store, packet_id, viewer, from, GRABS_PAGE).await? {
            None => ViewAs::NotFound,
            Some((v, recipient)) => {
                if v.packet.recipient_count == 0 || recipient || v.packet.sender_id == viewer {
                    ViewAs::Found(Box::new(v))
                } else {
                    ViewAs::Forbidden
                }
            }
        },
    )
}

/// The snapshot of `packet_id` (the page of `size` positions from `from`) and whether
/// `viewer` is one of its recipients.
async fn snapshot(
    store: &Store,
    packet_id: &str,
    viewer: &str,
    from: u32,
    size: u32,
) -> Result<Option<(PacketView, bool)>, Error> {
    Ok(snapshot_reply(store, packet_id, viewer, from, size)
        .await?
        .map(|(snap, view)| (view, snap.recipient)))
}

/// The page of `size` positions from `from` as the script answered it, and its
/// [`PacketView`] ([`build`]).
async fn snapshot_reply(
    store: &Store,
    packet_id: &str,
    viewer: &str,
    from: u32,
    size: u32,
) -> Result<Option<(ViewReply, PacketView)>, Error> {
    let Some(snap) = due_read(store, packet_id, viewer, from, size).await? else {
        return Ok(None);
    };
    let view = build(packet_id, viewer, &snap, from, size)?;
    Ok(Some((snap, view)))
}

/// [`read`], after running a draw packet's draw when it is due (as a grab would), so that the
/// view shows its result (docs/design.md, "Draws").
async fn due_read(
    store: &Store,
    packet_id: &str,
    viewer: &str,
    from: u32,
    size: u32,
) -> Result<Option<ViewReply>, Error> {
    let Some(snap) = read(store, packet_id, viewer, from, size).await? else {
        return Ok(None);
    };
    if draw_due(&snap) {
        crate::packets::draw::run(store, packet_id).await?;
        return read(store, packet_id, viewer, from, size).await;
    }
    Ok(Some(snap))
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

/// `packet_view.lua`'s snapshot of `packet_id` as `viewer` (`""`: nobody) asks for it,
/// with the page of `size` positions from share id `from`, as the script answered it; `None`
/// for no such packet (including ids of the wrong shape).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub(crate) async fn read(
    store: &Store,
    packet_id: &str,
    viewer: &str,
    from: u32,
    size: u32,
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
        order: &keys.order,
        viewer,
        from: from.max(1),
        size,
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?;
    PacketViewCall::reply(reply)
}

/// The [`PacketView`] of a snapshot [`read`] for `viewer` with the page of `size` positions
/// from share id `from`: the page's grabs in share-id order (checked to count `from`,
/// `from + 1`, ... without a gap), the viewer's own grab, the status at the script's Redis
/// `TIME`, the best luck once every share is grabbed (as grabs recorded it in meta), the
/// page's reveal once no grab can change the packet.
///
/// # Errors
/// [`Error::Internal`] when a record does not parse or the share ids skip or repeat.
pub(crate) fn build(
    packet_id: &str,
    viewer: &str,
    read: &ViewReply,
    from: u32,
    size: u32,
) -> Result<PacketView, Error> {
    let from = from.max(1);
    let packet = Packet::from_fields(&read.meta)?;
    let mut list = Vec::with_capacity(read.page.len());
    for g in &read.page {
        list.push(Grab {
            share: Share::parse(&g.record)?,
            claimed: !g.claim.is_empty(),
            user_id: g.user.clone(),
        });
    }
    // Share ids count from 1 in grab order: they are the grab order.
    list.sort_unstable_by_key(|g| g.share.share_id);
    let first = if read.every { 1 } else { from };
    if let Some((i, g)) = (first..).zip(&list).find(|(i, g)| g.share.share_id != *i) {
        return Err(Error::Internal(format!(
            "packet {packet_id}: grab records skip or repeat share id {i} (found {})",
            g.share.share_id
        )));
    }
    let best = if read.every {
        best_luck(&list)
    } else {
        recorded_best(&read.meta)
    };
    if read.every {
        list = list
            .into_iter()
            .skip(from as usize - 1)
            .take(size as usize)
            .collect();
    }
    let mine = match &read.mine {
        Some((record, claim)) => Some(Grab {
            user_id: viewer.to_string(),
            share: Share::parse(record)?,
            claimed: !claim.is_empty(),
        }),
        None => None,
    };
    let status = Status::at(&packet, read.now_ms);
    let best_luck = (packet.grabbed_count >= packet.count)
        .then_some(best)
        .flatten();
    let reveal = match (&packet.salt, status.reveals()) {
        (Some(salt), true) => reveal(packet_id, &packet, salt, from, size, &list, &read.ungrabbed),
        _ => None,
    };
    Ok(PacketView {
        next_cursor: next_page(&packet, status.reveals(), from, size),
        packet,
        status,
        grabs: list,
        mine,
        best_luck,
        reveal,
    })
}

/// The best luck as grabs recorded it in meta (`best_user`, `best_cents`: the largest share,
/// ties to the earlier grab); `None` when no grab recorded it.
fn recorded_best(meta: &HashMap<String, String>) -> Option<(String, i64)> {
    let user = meta.get("best_user")?;
    let cents = meta.get("best_cents")?.parse().ok()?;
    Some((user.clone(), cents))
}

/// The fairness receipt's reveal of one page of a packet that no grab can change any more:
/// the page's grabbed shares in share-id order, then its un-grabbed ones in list order (the
/// order they would have been grabbed in), one per position of the page up to `count`.
/// `None`, logged, when the records do not add up to the page (a packet settled by a release
/// that deleted the share list at settlement): the view still answers, without a reveal.
fn reveal(
    packet_id: &str,
    packet: &Packet,
    salt: &str,
    from: u32,
    size: u32,
    grabs: &[Grab],
    ungrabbed: &[String],
) -> Option<Reveal> {
    let last = from
        .saturating_add(size)
        .saturating_sub(1)
        .min(packet.count);
    let positions = if from > last { 0 } else { last - from + 1 };
    let mut shares_cents: Vec<i64> = grabs.iter().map(|g| g.share.amount_cents).collect();
    shares_cents.extend(ungrabbed.iter().filter_map(|a| a.parse::<i64>().ok()));
    if shares_cents.len() != positions as usize {
        tracing::warn!(
            packet_id,
            recorded = shares_cents.len(),
            positions,
            "the page's shares do not add up to its positions: no reveal"
        );
        return None;
    }
    Some(Reveal {
        salt: salt.to_string(),
        shares_cents,
    })
}
