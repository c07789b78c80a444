//! What dropping a draw's entrants costs the server: the tickets set of every entrant, copied
//! (`COPY`, outside the measurement) and then deleted by `DEL` (freed by the command), by
//! `UNLINK` (freed by a background thread), and by expiry (`settle.lua` gives the entrants the
//! packet's TTL, so this is how a settled draw's set goes), with `lazyfree-lazy-expire` off and
//! on (off: the expiry cycle frees it on the main thread; on: a background thread does).

use std::time::Instant;

use serde_json::{json, Value as Json};

use super::hold::{self, Held};
use super::Server;

/// How the copy is dropped.
#[derive(Clone, Copy, Debug)]
pub enum How {
    Del,
    Unlink,
    /// `PEXPIRE 1`, then the expiry cycle, with `lazyfree-lazy-expire` set to this.
    Expire(bool),
}

impl How {
    pub fn label(self) -> String {
        match self {
            How::Del => "DEL".into(),
            How::Unlink => "UNLINK".into(),
            How::Expire(lazy) => format!(
                "expiry, lazyfree-lazy-expire {}",
                if lazy { "yes" } else { "no" }
            ),
        }
    }
}

/// One way of dropping the set: how long until it was gone, and what that held the server
/// for.
pub struct Dropped {
    pub how: How,
    pub gone_ms: f64,
    pub held: Held,
}

impl Dropped {
    /// The longest hold, µs: a command's (`SLOWLOG`) or the expiry cycle's (`LATENCY
    /// LATEST`, whole ms).
    pub fn max_hold_usec(&self) -> u64 {
        self.held
            .max_usec()
            .max(self.held.max_event_ms().max(0) as u64 * 1000)
    }

    pub fn json(&self) -> Json {
        let mut j = self.held.json();
        let o = j.as_object_mut().expect("an object");
        o.insert("how".into(), json!(self.how.label()));
        o.insert("gone_ms".into(), json!(self.gone_ms));
        o.insert("max_hold_usec".into(), json!(self.max_hold_usec()));
        j
    }
}

/// Copies `tickets` and drops the copy each way in turn; puts `lazyfree-lazy-expire` back as it
/// was.
pub async fn drop_each_way(s: &mut Server, tickets: &str) -> Vec<Dropped> {
    let was: Vec<String> = s.query(&["CONFIG", "GET", "lazyfree-lazy-expire"]).await;
    let copy = format!("{tickets}:bench-copy");
    let mut out = Vec::new();
    for how in [How::Del, How::Unlink, How::Expire(false), How::Expire(true)] {
        let copied: i64 = s.query(&["COPY", tickets, &copy]).await;
        assert_eq!(copied, 1, "COPY of the tickets set");
        if let How::Expire(lazy) = how {
            let v = if lazy { "yes" } else { "no" };
            s.cmd(&["CONFIG", "SET", "lazyfree-lazy-expire", v]).await;
        }
        let keys: i64 = s.query(&["DBSIZE"]).await;
        let mut conn = s.connect().await;
        let copy_key = copy.clone();
        let (gone, held) = hold::measure(s, 10_000, 0, async move {
            let started = Instant::now();
            match how {
                How::Del | How::Unlink => {
                    let name = if matches!(how, How::Del) {
                        "DEL"
                    } else {
                        "UNLINK"
                    };
                    let n: i64 = redis::cmd(name)
                        .arg(&copy_key)
                        .query_async(&mut conn)
                        .await
                        .expect(name);
                    assert_eq!(n, 1, "{name} of the copy");
                }
                How::Expire(_) => {
                    let set: i64 = redis::cmd("PEXPIRE")
                        .arg(&copy_key)
                        .arg(1)
                        .query_async(&mut conn)
                        .await
                        .expect("PEXPIRE");
                    assert_eq!(set, 1, "PEXPIRE of the copy");
                    hold::until_fewer_keys(&mut conn, keys).await;
                }
            }
            started.elapsed().as_secs_f64() * 1e3
        })
        .await;
        eprintln!("dropped the copy: {}", how.label());
        out.push(Dropped {
            how,
            gone_ms: gone,
            held,
        });
    }
    if let [_, v] = was.as_slice() {
        s.cmd(&["CONFIG", "SET", "lazyfree-lazy-expire", v]).await;
    }
    out
}
