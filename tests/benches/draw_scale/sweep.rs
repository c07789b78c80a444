//! What a chunk's size does to its hold: small draw packets entered at the start (so their
//! draws are due by the time the large one is drawn), each drawn with another chunk size
//! (`store::packets::draw::run_in_chunks`), every call's server time from `SLOWLOG`.

use hongbao::packets::draw::{self, DrawState};
use hongbao::store::keys::Keys;
use hongbao::store::scripts::DRAW_RUN;
use hongbao::{Config, Store};
use serde_json::{json, Value as Json};

use super::enter::{self, Target};
use super::{draw_packet, hold, Server, Settings};
use crate::support::median;

/// The chunk sizes tried, one packet each.
pub const CHUNKS: [u32; 4] = [1_000, 500, 250, 100];
/// Each small packet's entrants and shares.
pub const ENTRANTS: usize = 20_000;
pub const SHARES: u32 = 4_000;
/// Their entry window, s: long enough for their entries, short enough to be due before the
/// large draw is.
const ENTRY_SECS: u64 = 15;

/// One chunk size's draw.
pub struct Swept {
    pub chunk: u32,
    pub call_usec: Vec<u64>,
}

impl Swept {
    pub fn max_usec(&self) -> u64 {
        self.call_usec.iter().copied().max().unwrap_or(0)
    }

    pub fn median_usec(&self) -> f64 {
        median(self.call_usec.iter().map(|&u| u as f64).collect())
    }

    /// Server time per winner, µs (all calls).
    pub fn usec_per_winner(&self) -> f64 {
        self.call_usec.iter().sum::<u64>() as f64 / f64::from(SHARES)
    }

    pub fn json(&self) -> Json {
        json!({
            "chunk": self.chunk,
            "calls": self.call_usec.len(),
            "call_usec": self.call_usec,
            "max_call_usec": self.max_usec(),
            "median_call_usec": self.median_usec(),
            "usec_per_winner": self.usec_per_winner(),
        })
    }
}

/// Creates one small draw packet per chunk size and enters [`ENTRANTS`] users in each;
/// answers their ids.
pub async fn prepare(s: &mut Server, store: &Store, cfg: &Config) -> Vec<String> {
    let st = Settings {
        entrants: ENTRANTS,
        winners: SHARES,
        entry_secs: ENTRY_SECS,
    };
    let keys = Keys::new(&cfg.key_prefix);
    let mut ids = Vec::new();
    for chunk in CHUNKS {
        let id = draw_packet(store, &st, &format!("sweep-{chunk}")).await;
        let pk = keys.packet(&id);
        let seed: String = s.query(&["HGET", &pk.meta, "draw_seed"]).await;
        let rate_of = |user: &str| keys.grab_rate(&id, user);
        let target = Target {
            pk: &pk,
            rate_of: &rate_of,
            cfg,
            seed: &seed,
        };
        enter::enter_range(&s.conn, &target, 0, ENTRANTS).await;
        ids.push(id);
    }
    ids
}

/// Draws each small packet with its chunk size (all due by now).
pub async fn draw_each(s: &mut Server, store: &Store, ids: &[String]) -> Vec<Swept> {
    let mut out = Vec::new();
    for (id, chunk) in ids.iter().zip(CHUNKS) {
        let (state, held) = hold::measure(s, 10_000, hold::SCRIPT_CALLS, async {
            draw::run_in_chunks(store, id, chunk).await.expect("draw")
        })
        .await;
        assert_eq!(
            state,
            DrawState::Drawn {
                winners: u64::from(SHARES),
                entrants: ENTRANTS as u64
            },
            "the small draw in chunks of {chunk}"
        );
        let call_usec = held
            .measured()
            .filter(|l| l.command == "evalsha" && l.sha == DRAW_RUN.get_hash())
            .map(|l| l.usec)
            .collect();
        out.push(Swept { chunk, call_usec });
    }
    out
}
