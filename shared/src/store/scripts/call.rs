//! [`Call`]: a script's keys and arguments by name, turned into KEYS and ARGV in one place.

use redis::{Script, ScriptInvocation, ToRedisArgs};

use super::Lua;

/// Where a [`Call`] writes its KEYS and ARGV, each value with the name of its struct field
/// (the name its script's header gives it).
pub trait Sink {
    /// Appends `value` to KEYS (a slice appends each of its items).
    fn key<T: ToRedisArgs>(&mut self, name: &'static str, value: T);
    /// Appends `value` to ARGV (a slice or a tuple appends each of its items).
    fn arg<T: ToRedisArgs>(&mut self, name: &'static str, value: T);
}

impl Sink for ScriptInvocation<'_> {
    fn key<T: ToRedisArgs>(&mut self, _name: &'static str, value: T) {
        ScriptInvocation::key(self, value);
    }
    fn arg<T: ToRedisArgs>(&mut self, _name: &'static str, value: T) {
        ScriptInvocation::arg(self, value);
    }
}

/// The KEYS and ARGV of a call as text (numbers in decimal, as Redis receives them).
#[derive(Debug, Default)]
struct Texts {
    keys: Vec<String>,
    args: Vec<String>,
}

fn push_texts<T: ToRedisArgs>(out: &mut Vec<String>, value: T) {
    out.extend(
        value
            .to_redis_args()
            .into_iter()
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
    );
}

impl Sink for Texts {
    fn key<T: ToRedisArgs>(&mut self, _name: &'static str, value: T) {
        push_texts(&mut self.keys, value);
    }
    fn arg<T: ToRedisArgs>(&mut self, _name: &'static str, value: T) {
        push_texts(&mut self.args, value);
    }
}

/// One call of one Lua script: a struct whose fields are its keys (in KEYS order), then its
/// arguments (in ARGV order), written by `shared/build.rs` from the script's header, with
/// [`Call::KEYS`], [`Call::ARGV`] and [`Call::write`] derived from the one field list. A slice field is
/// a variable number of values (e.g. the share amounts of `create_packet.lua`); every other
/// field is exactly one value.
pub trait Call {
    /// The field names of the keys, in KEYS order (the names of the script's `-- KEYS[n]`
    /// header lines).
    const KEYS: &'static [&'static str];
    /// The field names of the arguments, in ARGV order (the names of its `-- ARGV[n]` lines).
    const ARGV: &'static [&'static str];

    /// The script this call runs.
    fn lua() -> &'static Lua;

    /// Writes the keys, then the arguments, in order: the one place that orders them.
    fn write<S: Sink>(&self, out: &mut S);

    /// The `EVALSHA` of this call (send it with `invoke_async`; on `NOSCRIPT` the store's
    /// connection re-sends it as `EVAL`).
    fn invocation(&self) -> ScriptInvocation<'static> {
        self.invocation_of(Self::lua())
    }

    /// The same keys and arguments for another script text (tests that swap a script's clock
    /// for a fixed instant).
    fn invocation_of<'s>(&self, script: &'s Script) -> ScriptInvocation<'s> {
        // Known to the connection's NOSCRIPT and WAIT handling from now on.
        Self::lua().note_invoked();
        let mut inv = script.prepare_invoke();
        self.write(&mut inv);
        inv
    }

    /// The keys and the arguments as text, in order (e.g. for a pipeline of `EVALSHA`s).
    fn texts(&self) -> (Vec<String>, Vec<String>) {
        let mut t = Texts::default();
        self.write(&mut t);
        (t.keys, t.args)
    }

    /// `EVALSHA <sha1> <numkeys> <keys...> <args...>` as words (e.g. a `redis-benchmark`
    /// command line).
    fn evalsha_words(&self) -> Vec<String> {
        let (keys, args) = self.texts();
        let mut words = vec![
            "EVALSHA".to_string(),
            Self::lua().get_hash().to_string(),
            keys.len().to_string(),
        ];
        words.extend(keys);
        words.extend(args);
        words
    }
}
