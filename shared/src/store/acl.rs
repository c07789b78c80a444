//! The Redis users of a deployment, least privilege per group of functions: each function
//! connects as one [`RedisUser`] whose ACL (its access string, [`RedisUser::access_string`])
//! allows only the key families ([`KeyFamily`]) its code touches and only the commands its
//! scripts and its own calls send. A compromised vote function cannot read or write a wallet;
//! the ledger export cannot move money; the order codes see only their day hashes.
//!
//! Declared here once; `functions.json` carries each function's user and access string, the
//! template creates one ElastiCache / MemoryDB user per [`RedisUser`] from it, the end-to-end
//! runs connect every function as its user, and a test asks a real server (`ACL DRYRUN`) that
//! each user may run every command of its scripts on its key families and nothing on the
//! others'.
//!
//! Rules (Redis ACL, <https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/>):
//! * Inside a script, every `redis.call` is checked against the calling user's ACL, keys
//!   included; a refusal is an error at that call, after the script's earlier writes. So a
//!   user's key families cover every key of every script it runs (the end-to-end runs prove
//!   it), never a subset.
//! * Commands: `-@all`, then the connection commands (`@connection`: `AUTH`, `HELLO`,
//!   `PING`, `READONLY`, `WAIT`, ...) and every `@read` command, then `-@dangerous` (no `KEYS`,
//!   no `CONFIG`, no `CLIENT KILL`, no `FLUSHALL`), then back the few the connection needs
//!   (`INFO` for the eviction check at cold start, `CLUSTER INFO` and `CLUSTER SLOTS` for the
//!   cluster client and the scans, `TIME`, `EVALSHA` and `EVAL` for the scripts, `SET` for
//!   the replication fence and the locks, the store's few writes outside scripts: [`BASE`]),
//!   then the writes of its scripts.
//! * ElastiCache's access strings take no password and no `reset` (the store's API sets the
//!   password or IAM): the string starts with `on`.

use crate::store::scripts;

/// A family of keys, as a glob of the key after `<prefix>:` (Redis ACL `~pattern`; `?` is one
/// character: a wallet's hash tag is 4 hex digits, [`super::keys::user_tag`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyFamily {
    /// A red packet's keys (`{<tag>}:packet:<id>` and its suffixes).
    Packets,
    /// A user's wallet (`{<tag>}:wallet:<user>...`).
    Wallets,
    /// A merchant's budget (`{<tag>}:merchant:<merchant>...`).
    Merchants,
    /// The money journal of a hash tag (`{<tag>}:journal`).
    Journals,
    /// The replication fence of any hash tag (`{<tag>}:fence`, written before a `WAIT`).
    Fences,
    /// The reclaim index, its retries and its lock (`{reclaim}:*`).
    Reclaim,
    /// reconcile-cron's cursor and state (`{reconcile}:*`).
    Reconcile,
    /// ledger-export's lock (`{export}:*`).
    Export,
    /// Coupon campaigns: the global indexes (`{coupon}:*`), the pools (`{<tag>}:coupon:*`), the
    /// code directory (`{<tag>}:coupon-codes`) and the users' coupon lists (`{<tag>}:coupons:*`).
    Coupons,
    /// The voting site (`{vote:<site>}:*`).
    Voting,
    /// The order codes (`{oc}:*`).
    OrderCodes,
}

impl KeyFamily {
    /// Every family.
    pub const ALL: &'static [KeyFamily] = &[
        KeyFamily::Packets,
        KeyFamily::Wallets,
        KeyFamily::Merchants,
        KeyFamily::Journals,
        KeyFamily::Fences,
        KeyFamily::Reclaim,
        KeyFamily::Reconcile,
        KeyFamily::Export,
        KeyFamily::Coupons,
        KeyFamily::Voting,
        KeyFamily::OrderCodes,
    ];

    /// The globs of the family's keys after `<prefix>:`.
    pub fn patterns(self) -> &'static [&'static str] {
        match self {
            KeyFamily::Packets => &["{????}:packet:*"],
            KeyFamily::Wallets => &["{????}:wallet:*"],
            KeyFamily::Merchants => &["{????}:merchant:*"],
            KeyFamily::Journals => &["{????}:journal"],
            KeyFamily::Fences => &["{*}:fence"],
            KeyFamily::Reclaim => &["{reclaim}:*"],
            KeyFamily::Reconcile => &["{reconcile}:*"],
            KeyFamily::Export => &["{export}:*"],
            KeyFamily::Coupons => &[
                "{coupon}:*",
                "{????}:coupon:*",
                "{????}:coupon-codes",
                "{????}:coupons:*",
            ],
            KeyFamily::Voting => &["{vote:*}:*"],
            KeyFamily::OrderCodes => &["{oc}:*"],
        }
    }
}

/// A Redis user of the deployment: the functions of a group connect as it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisUser {
    /// The red packets, wallets, merchant budgets, coupons and their scheduled jobs (they
    /// share packets, wallets and journals within one script).
    App,
    /// ledger-export: reads the journals, acknowledges what it published, completes the
    /// coupon entries it exports (the users' coupon lists; a share coupon's packet's
    /// `redeem_by`).
    LedgerExport,
    /// vote: the voting site's keys only.
    Vote,
    /// next-order-code: the order codes' keys only.
    OrderCodes,
}

/// Commands every user may send outside its scripts, after `-@all +@connection +@read
/// -@dangerous` (see the module's rules): what the connection needs, and every write the store
/// sends outside a script (reclaim-cron's index and retries, reconcile-cron's baselines and
/// cursor, a packet's index of due refunds, the users' coupon lists, the article sequence, a
/// retired day of order codes) and `MULTI` / `EXEC` of its atomic pipelines. Whichever
/// function sends one, every user may: a user's key families are what separate the users, and
/// a test (tests/it/acl.rs) reads the store's code for every command it sends outside a script
/// and asks the server that each user may send it.
pub const BASE: &[&str] = &[
    "info",
    "time",
    "cluster|info",
    "cluster|slots",
    "evalsha",
    "eval",
    "set",
    "multi",
    "exec",
    "zadd",
    "zrem",
    "hdel",
    "hincrby",
    "hset",
    "del",
    "pexpireat",
    "incr",
];

impl RedisUser {
    /// Every user, in the order the template lists them.
    pub const ALL: &'static [RedisUser] = &[
        RedisUser::App,
        RedisUser::LedgerExport,
        RedisUser::Vote,
        RedisUser::OrderCodes,
    ];

    /// The user's name: the part after `hongbao-` of its ElastiCache / MemoryDB user
    /// (`hongbao-app-<stack>`), and of the local users the end-to-end runs create.
    pub fn name(self) -> &'static str {
        match self {
            RedisUser::App => "app",
            RedisUser::LedgerExport => "ledger-export",
            RedisUser::Vote => "vote",
            RedisUser::OrderCodes => "order-codes",
        }
    }

    /// The key families the user may touch.
    pub fn families(self) -> &'static [KeyFamily] {
        use KeyFamily::*;
        match self {
            RedisUser::App => &[
                Packets, Wallets, Merchants, Journals, Fences, Reclaim, Reconcile, Coupons,
            ],
            RedisUser::LedgerExport => &[Journals, Fences, Export, Coupons, Packets],
            RedisUser::Vote => &[Voting, Fences],
            RedisUser::OrderCodes => &[OrderCodes, Fences],
        }
    }

    /// The scripts (files of `lua/`) the user's functions run: those whose header names it
    /// (`-- redis users:`); every name a header gives is some user's (a test), and the
    /// end-to-end runs, each function as its user, end with an empty `ACL LOG`.
    pub fn scripts(self) -> Vec<&'static str> {
        scripts::REDIS_USERS
            .iter()
            .filter(|(_, users)| users.contains(&self.name()))
            .map(|(file, _)| *file)
            .collect()
    }

    /// The commands its scripts send (`redis.call` / `redis.pcall` with a literal name, the
    /// only form the scripts use: a test), lower case, sorted, each once.
    pub fn script_commands(self) -> Vec<String> {
        let mut out: Vec<String> = scripts::all_sources()
            .filter(|(file, _)| self.scripts().contains(file))
            .flat_map(|(_, source)| commands_in(source))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The user's access string (ElastiCache `AccessString`, MemoryDB `AccessString`, or the
    /// rules of `ACL SETUSER <user>` after a password), with key prefix `prefix` (the template
    /// passes `${KeyPrefix}` for `!Sub`).
    pub fn access_string(self, prefix: &str) -> String {
        let mut rules = vec!["on".to_string()];
        for family in self.families() {
            for pattern in family.patterns() {
                rules.push(format!("~{prefix}:{pattern}"));
            }
        }
        rules.extend(["-@all", "+@connection", "+@read", "-@dangerous"].map(String::from));
        let mut commands: Vec<String> = BASE.iter().map(|c| c.to_string()).collect();
        commands.extend(self.script_commands());
        let mut seen = std::collections::BTreeSet::new();
        for c in commands {
            if seen.insert(c.clone()) {
                rules.push(format!("+{c}"));
            }
        }
        rules.join(" ")
    }
}

/// The command names of `redis.call('<NAME>'` and `redis.pcall("<NAME>"` in `source`, lower
/// case, in order (repeats kept).
pub fn commands_in(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for call in ["redis.call(", "redis.pcall("] {
        let mut rest = source;
        while let Some(at) = rest.find(call) {
            rest = &rest[at + call.len()..];
            let quote = rest.chars().next();
            if let Some(q @ ('\'' | '"')) = quote {
                if let Some(end) = rest[1..].find(q) {
                    out.push(rest[1..1 + end].to_ascii_lowercase());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_redis_user_a_header_names_exists() {
        for (file, users) in scripts::REDIS_USERS {
            for name in *users {
                assert!(
                    RedisUser::ALL.iter().any(|u| u.name() == *name),
                    "{file}: no Redis user {name}"
                );
            }
        }
    }

    #[test]
    fn every_script_names_its_commands_literally() {
        for (file, source) in scripts::all_sources() {
            let calls =
                source.matches("redis.call(").count() + source.matches("redis.pcall(").count();
            assert_eq!(
                calls,
                commands_in(source).len(),
                "{file}: a command not named by a literal"
            );
        }
    }

    #[test]
    fn the_vote_user_reaches_no_money_key() {
        let access = RedisUser::Vote.access_string("hb");
        assert!(
            !access.contains("wallet")
                && !access.contains("merchant")
                && !access.contains("journal")
        );
    }

    #[test]
    fn commands_are_read_from_calls_with_either_quote() {
        let source = "redis.call('HGET', k)\nredis.pcall(\"zadd\", k, 1, m)";
        assert_eq!(commands_in(source), vec!["hget", "zadd"]);
    }
}
