//! The Lua scripts (the helpers and the shared scripts in `lua/`, an operation's scripts beside
//! its handler, e.g. `order_codes/next/order_code.lua`), compiled into the binary and invoked by
//! EVALSHA.
//!
//! [`redis::Script::invoke_async`] sends EVALSHA; on a cluster the call is routed by the hash
//! slot of its first key, and every script's keys share one hash tag (see [`super::keys`]).
//! On `NOSCRIPT` (a new node, a failover, `SCRIPT FLUSH`) the connection ([`super::Conn`])
//! re-sends the call as `EVAL` with the source from `eval_for`: same keys, same node, and the
//! node caches the script. (redis-rs would send `SCRIPT LOAD` to *every* node of a cluster
//! instead, so one node being down would fail scripts on all the others.) No warm-up is needed.
//!
//! # One typed call per script, from its header
//!
//! Each script's header (its leading comment block) is the one declaration
//! of its keys and arguments (names, order, types, docs), of the helpers prepended to it and
//! of whether its writes are acknowledged: `shared/build.rs` checks it against the script's
//! body (the rules of `shared/src/store/scripts/header.rs`: indices in place, every literal
//! `KEYS[n]` the body reads declared) and writes each script's static ([`GRAB`] for `grab.lua`) and call struct
//! ([`GrabCall`]), whose fields are the header's entries in KEYS order, then ARGV order.
//! [`Call::invocation`] turns a call into the `EVALSHA` (the store's steps),
//! [`Call::texts`] and [`Call::evalsha_words`] into text (the benchmarks' pipelines and
//! `redis-benchmark` command lines); nothing else lists a script's keys or arguments.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};

use redis::{Cmd, Script, Value};

use super::error::Error;

mod call;
#[cfg(test)]
mod header;

pub use call::{Call, Sink};

/// A Lua script with its source, so a `NOSCRIPT` can be answered with `EVAL` on the same node.
/// Dereferences to [`redis::Script`] (its hash, `SCRIPT LOAD`); a call of it is built by its
/// call struct ([`Call`]), which orders the keys and arguments.
///
/// The source is the code of `lua/<file>` (after its helpers') with every whole-line comment
/// blanked by `shared/build.rs`: the same lines, so Redis's `user_script:<n>` still counts
/// lines of the files, and no binary carries the scripts' documentation (60 % of their bytes).
pub struct Lua {
    script: Script,
    source: &'static str,
    file: &'static str,
    path: &'static str,
    /// In [`INVOKED`] (set by [`Lua::note_invoked`]).
    invoked: AtomicBool,
}

/// The scripts this process has sent (`Call::invocation`): where a `NOSCRIPT` or an
/// acknowledged call finds a script by its SHA-1.
static INVOKED: Mutex<Vec<&'static Lua>> = Mutex::new(Vec::new());

impl Lua {
    fn new(file: &'static str, path: &'static str, source: &'static str) -> Self {
        Lua {
            script: Script::new(source),
            source,
            file,
            path,
            invoked: AtomicBool::new(false),
        }
    }

    /// Records that this script is being sent (once per process; afterwards one relaxed
    /// atomic load per call).
    pub(crate) fn note_invoked(&'static self) {
        if !self.invoked.load(Ordering::Relaxed) {
            let mut invoked = INVOKED.lock().unwrap_or_else(|e| e.into_inner());
            if !self.invoked.swap(true, Ordering::Relaxed) {
                invoked.push(self);
            }
        }
    }

    /// The script this process has sent whose SHA-1 is `sha`.
    fn invoked(sha: &str) -> Option<&'static Lua> {
        let invoked = INVOKED.lock().unwrap_or_else(|e| e.into_inner());
        invoked.iter().copied().find(|l| l.get_hash() == sha)
    }

    /// The script's source as sent to Redis (its helpers, then its file; comment lines empty).
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// The script's file name, e.g. `grab.lua` (unique among the scripts).
    pub fn file(&self) -> &'static str {
        self.file
    }

    /// The script's path from the repository's root, e.g. `shared/src/packets/grab/grab.lua`.
    pub fn path(&self) -> &'static str {
        self.path
    }
}

impl std::ops::Deref for Lua {
    type Target = Script;
    fn deref(&self) -> &Script {
        &self.script
    }
}

/// A fresh id for one call of a script that records its outcome under it (16 hex digits): a
/// checkout call (its answer's key, `Keys::call_answer`), a deposit or a withdrawal (its reference's record).
/// The same call sent again (the client re-sends a command whose reply was lost, at any later
/// moment) carries the same id, so it answers as its first run did and writes nothing.
pub(crate) fn call_id() -> String {
    use rand::Rng;
    format!("{:016x}", rand::rng().random::<u64>())
}

/// For an `EVALSHA` of a script in [`ACKNOWLEDGED`] (one this process sent), its first key
/// (the hash slot it runs on).
pub(crate) fn acknowledged_call(cmd: &Cmd) -> Option<Vec<u8>> {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(b) => b,
        _ => &b""[..],
    });
    if !args.next()?.eq_ignore_ascii_case(b"EVALSHA") {
        return None;
    }
    let sha = std::str::from_utf8(args.next()?).ok()?;
    let lua = Lua::invoked(sha)?;
    if !ACKNOWLEDGED.contains(&lua.file()) || args.next()? == b"0" {
        return None;
    }
    args.next().map(<[u8]>::to_vec)
}

/// For an `EVALSHA <sha> <numkeys> <keys...> <args...>` of a script this process sent, the same
/// call as `EVAL <source> ...`; `None` for any other command.
pub(crate) fn eval_for(cmd: &Cmd) -> Option<Cmd> {
    let mut args = cmd.args_iter().map(|a| match a {
        redis::Arg::Simple(b) => b,
        _ => &b"0"[..], // a cursor argument: never part of EVALSHA
    });
    if !args.next()?.eq_ignore_ascii_case(b"EVALSHA") {
        return None;
    }
    let sha = std::str::from_utf8(args.next()?).ok()?;
    let lua = Lua::invoked(sha)?;
    let mut eval = redis::cmd("EVAL");
    eval.arg(lua.source());
    for a in args {
        eval.arg(a);
    }
    Some(eval)
}

include!(concat!(env!("OUT_DIR"), "/scripts.rs"));

/// Every script with its file name, e.g. for `SCRIPT LOAD` in benchmarks.
pub fn all() -> impl Iterator<Item = (&'static str, &'static Script)> {
    all_lua().map(|(name, lua)| (name, &lua.script))
}

/// Every script's file name and its source as sent (helpers first, comment lines blanked):
/// what [`super::acl`] reads the commands of a Redis user's scripts from.
pub fn all_sources() -> impl Iterator<Item = (&'static str, &'static str)> {
    all_lua().map(|(name, lua)| (name, lua.source()))
}

/// Every script with a header declaring keys (its file name is its own: [`Lua::file`]).
fn all_lua() -> impl Iterator<Item = (&'static str, &'static Lua)> {
    ALL.iter().map(|lua| (lua.file(), &***lua))
}

/// A script's array reply as text items (bulk strings, simple strings and integers).
///
/// # Errors
/// [`Error::Internal`] when the reply is not a flat array of such items.
pub fn texts(script: &str, value: Value) -> Result<Vec<String>, Error> {
    match value {
        Value::Array(items) => items.into_iter().map(|v| text(script, v)).collect(),
        other => Err(Error::bad_reply(script, format!("{other:?}"))),
    }
}

/// One reply item as text.
///
/// # Errors
/// [`Error::Internal`] for nil, nested arrays and other non-text items.
pub fn text(script: &str, value: Value) -> Result<String, Error> {
    match value {
        Value::BulkString(b) => String::from_utf8(b).map_err(|e| Error::bad_reply(script, e)),
        Value::SimpleString(s) => Ok(s),
        Value::Int(i) => Ok(i.to_string()),
        Value::Okay => Ok("OK".into()),
        other => Err(Error::bad_reply(script, format!("{other:?}"))),
    }
}

/// Parses an integer item of a reply.
///
/// # Errors
/// [`Error::Internal`] when `item` is missing or not an integer.
pub(crate) fn int(script: &str, item: Option<&String>) -> Result<i64, Error> {
    item.and_then(|s| s.parse().ok())
        .ok_or_else(|| Error::bad_reply(script, format!("expected an integer, got {item:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script at `path` (from the repository's root) as written, comments and all (the
    /// embedded source has its comments blanked).
    fn file_text(path: &str) -> String {
        let path = format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn a_call_writes_its_fields_in_order() {
        let shares = [5, 7];
        let call = CreatePacketCall {
            wallet: "w",
            history_totals: "h",
            packet_id: "p",
            count: 2,
            share_amounts: &shares,
            ..Default::default()
        };
        let (keys, args) = call.texts();
        assert_eq!((keys.len(), args.len()), (14, 32));
        assert_eq!((keys[0].as_str(), keys[10].as_str()), ("w", "h"));
        assert_eq!(&args[..1], ["p"]);
        assert_eq!(&args[3..4], ["2"]);
        assert_eq!(&args[30..], ["5", "7"]);
        let days = [(20_000, "s1"), (20_001, "")];
        let words = OrderCodeCall {
            day_hashes: &["d1".into(), "d2".into()],
            newest_day: "n",
            quotas: &["q1".into(), "q2".into()],
            days: &days,
            base_offset: 3600,
            transitions: &[(7, 0)],
            ..Default::default()
        }
        .evalsha_words();
        assert_eq!(words[1], ORDER_CODE.get_hash());
        assert_eq!(&words[2..8], ["5", "d1", "d2", "n", "q1", "q2"]);
        assert_eq!(&words[15..], ["20000", "s1", "20001", "", "3600", "7", "0"]);
    }

    #[test]
    fn the_embedded_source_is_each_files_code_line_for_line() {
        for (name, lua) in all_lua() {
            let file = file_text(lua.path());
            let sent: Vec<&str> = lua.source().lines().collect();
            let written: Vec<&str> = file.lines().collect();
            assert!(
                sent.len() >= written.len(),
                "{name}: fewer lines sent than written"
            );
            // The file is the end of the source (its helpers come first), line for line.
            let tail = &sent[sent.len() - written.len()..];
            for (n, (sent, written)) in tail.iter().zip(&written).enumerate() {
                let expected = if written.trim_start().starts_with("--") {
                    ""
                } else {
                    written
                };
                assert_eq!(sent, &expected, "{name}:{}", n + 1);
            }
            let comments = sent.iter().filter(|l| l.trim_start().starts_with("--"));
            assert_eq!(
                comments.count(),
                0,
                "{name}: a comment line is sent to Redis"
            );
        }
    }
}
