//! A draw packet's draw (`draws::rules`): `lua/draw_run.lua` called chunk by chunk until the
//! draw is complete, by whichever request first finds `draw_at` passed (a grab answered
//! `draw_due`).

use crate::store::scripts::DrawRunCall;
use redis::Value;

use crate::store::keys::{is_packet_id, Keys};
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

/// The most winners one `draw_run.lua` call assigns: each costs the server an `LPOP`, an
/// `HSET` and their Lua, 3.6 to 7.3 µs (the `draw_scale` bench on Redis 7.0 and Valkey 9), so
/// a chunk holds the server 1 to 3 ms, well under the 5 ms any one call may hold it; 1,000
/// held Valkey 6.9 ms (docs/design.md, "Draws").
pub const DRAW_CHUNK: u32 = 250;

/// Where a draw stands after [`run`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrawState {
    /// No such packet.
    NotFound,
    /// The packet has no draw.
    NotADraw,
    /// Cancelled before its draw: nobody wins.
    Cancelled,
    /// Redis `TIME` is before `draw_at_ms`: nothing done.
    NotDue {
        /// When the draw is due, Unix ms.
        draw_at_ms: i64,
    },
    /// Complete (by this call or an earlier one).
    Drawn {
        /// How many won: `min(count, entrants)`.
        winners: u64,
        /// How many entered.
        entrants: u64,
    },
}

impl DrawRunCall<'_> {
    /// `draw_run.lua`'s reply: `Ok(None)` for `drawing:<done>:<winners>` (call again), else
    /// the state.
    ///
    /// # Errors
    /// [`Error::Internal`] for a reply of another shape.
    fn state(reply: Value) -> Result<Option<DrawState>, Error> {
        let reply = text("draw_run", reply)?;
        let bad = || Error::bad_reply("draw_run", &reply);
        let (label, data) = reply.split_once(':').unwrap_or((reply.as_str(), ""));
        let numbers: Vec<u64> = data
            .split(':')
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        Ok(Some(match (label, numbers.as_slice()) {
            ("drawing", [_, _]) => return Ok(None),
            ("not_found", []) => DrawState::NotFound,
            ("not_a_draw", []) => DrawState::NotADraw,
            ("cancelled", []) => DrawState::Cancelled,
            ("not_due", [at]) => DrawState::NotDue {
                draw_at_ms: i64::try_from(*at).map_err(|_| bad())?,
            },
            ("drawn", [winners, entrants]) => DrawState::Drawn {
                winners: *winners,
                entrants: *entrants,
            },
            _ => return Err(bad()),
        }))
    }
}

/// Runs packet `packet_id`'s draw to its end, [`DRAW_CHUNK`] winners per call, and answers
/// where it stands. Any number of callers may run it at once: each call assigns the next
/// chunk recorded in the packet, so no winner is assigned twice and the winners are the same
/// whoever runs it.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the chunks done stay done: run it
/// again); [`Error::Internal`] for a reply of the wrong shape or a packet whose records
/// disagree.
pub async fn run(store: &Store, packet_id: &str) -> Result<DrawState, Error> {
    run_in_chunks(store, packet_id, DRAW_CHUNK).await
}

/// [`run`] with at most `chunk` (≥ 1) winners per call.
///
/// # Errors
/// As [`run`].
pub async fn run_in_chunks(store: &Store, packet_id: &str, chunk: u32) -> Result<DrawState, Error> {
    if !is_packet_id(packet_id) {
        return Ok(DrawState::NotFound);
    }
    let keys = Keys::new(&store.config().key_prefix);
    let pk = keys.packet(packet_id);
    let journal = keys.journal_of_tag(&packet_id[..4]);
    let mut conn = store.conn().await?;
    loop {
        let reply: Value = DrawRunCall {
            meta: &pk.meta,
            shares: &pk.shares,
            grabs: &pk.grabs,
            tickets: &pk.tickets,
            journal: &journal,
            order: &pk.order,
            chunk,
        }
        .invocation()
        .invoke_async(&mut conn)
        .await?;
        if let Some(state) = DrawRunCall::state(reply)? {
            return Ok(state);
        }
    }
}
