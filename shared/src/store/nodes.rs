//! `REDIS_URL` as a list of nodes, so that a cluster client can start from any live one
//! instead of resting on one.
//!
//! The value is one URL (`rediss://host:6379`, as before), or several nodes of one cluster,
//! comma-separated: `rediss://a:6379,rediss://b:6379`. The rules, checked at settings load
//! (`Config::load`) and again at connect (a `Config` built in code skips the load):
//!
//! * every entry is a full URL (a bare `host:port` is refused), blanks around an entry are
//!   ignored, an empty entry (`a,,b`, a trailing comma) is refused;
//! * a list of more than one entry is for the cluster client (`REDIS_CLUSTER=true` or `auto`):
//!   every entry a TCP URL (`redis://` or `rediss://`; redis-rs also reads `valkey://` and
//!   `valkeys://`), all with the same scheme and `#` fragment, so all with TLS or all without;
//! * every entry carries the same user, password, database and `protocol` (redis-rs reaches
//!   every node of a cluster the same way, and refuses different ones); a password normally
//!   comes from `REDIS_PASSWORD` instead, and a `,` inside a URL's password must be written
//!   `%2C`;
//! * one entry may be anything redis-rs accepts, as before (a `unix://` socket included).
//!
//! An error names an entry by its position, never by its text: it may hold a password.

use redis::{ConnectionInfo, IntoConnectionInfo};

/// The TCP schemes a node list may use (the ones redis-rs connects over TCP).
const TCP_SCHEMES: [&str; 4] = ["redis", "rediss", "valkey", "valkeys"];

/// The entries of a `REDIS_URL` value, parsed, in order (at least one).
///
/// # Errors
/// Why the value cannot be used, naming the entry by its position only.
pub(crate) fn parse(value: &str) -> Result<Vec<ConnectionInfo>, String> {
    let entries: Vec<&str> = value.split(',').map(str::trim).collect();
    let n = entries.len();
    let which = |i: usize| {
        if n == 1 {
            "the URL".to_string()
        } else {
            format!("entry {} of {n}", i + 1)
        }
    };
    let mut first: Option<(url::Url, ConnectionInfo)> = None;
    let mut nodes = Vec::with_capacity(n);
    for (i, entry) in entries.iter().enumerate() {
        if entry.is_empty() {
            return Err(format!(
                "{} is empty (nodes are separated by single commas)",
                which(i)
            ));
        }
        if !entry.contains("://") {
            return Err(format!(
                "{} is not a URL: every entry is a full URL such as `rediss://host:6379`, \
                 not a bare host:port",
                which(i)
            ));
        }
        let url =
            url::Url::parse(entry).map_err(|e| format!("{} is not a valid URL ({e})", which(i)))?;
        let info = entry.into_connection_info().map_err(|e| {
            // redis-rs's own description is fixed text; its detail may quote the input.
            let why = if e.detail().is_none() {
                e.to_string()
            } else {
                e.category().to_string()
            };
            format!("{} is not a valid Redis URL ({why})", which(i))
        })?;
        if n > 1 && !TCP_SCHEMES.contains(&url.scheme()) {
            return Err(format!(
                "{} is a {}:// URL: a node list is for a cluster, whose nodes are `redis://` \
                 or `rediss://` URLs",
                which(i),
                url.scheme()
            ));
        }
        match &first {
            None => first = Some((url, info.clone())),
            Some((url0, info0)) => {
                if url.scheme() != url0.scheme() {
                    return Err(format!(
                        "{} is a {}:// URL and entry 1 a {}:// one: every node is reached the \
                         same way (all `redis://` or all `rediss://`)",
                        which(i),
                        url.scheme(),
                        url0.scheme()
                    ));
                }
                if url.fragment() != url0.fragment() {
                    return Err(format!(
                        "{} has another `#` fragment than entry 1 (`#insecure` on every entry \
                         or on none)",
                        which(i)
                    ));
                }
                let (a, b) = (info.redis_settings(), info0.redis_settings());
                if a.username() != b.username()
                    || a.password() != b.password()
                    || a.db() != b.db()
                    || a.protocol() != b.protocol()
                {
                    return Err(format!(
                        "{} has another user, password, database or protocol than entry 1: \
                         every node is reached the same way",
                        which(i)
                    ));
                }
            }
        }
        nodes.push(info);
    }
    Ok(nodes)
}

/// The host of a node (`None` for a unix socket), for the IAM `auto` settings.
pub(crate) fn host(info: &ConnectionInfo) -> Option<&str> {
    match info.addr() {
        redis::ConnectionAddr::Tcp(host, _) | redis::ConnectionAddr::TcpTls { host, .. } => {
            Some(host)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(value: &str) -> Vec<String> {
        parse(value)
            .unwrap()
            .iter()
            .map(|i| host(i).unwrap().to_string())
            .collect()
    }

    #[test]
    fn one_url_or_a_list() {
        assert_eq!(hosts("redis://127.0.0.1:6379"), ["127.0.0.1"]);
        assert_eq!(
            hosts("rediss://a.example:6379, rediss://b.example:6380 ,rediss://c.example"),
            ["a.example", "b.example", "c.example"]
        );
        // One entry: whatever redis-rs reads, as before.
        let unix = parse("unix:///run/redis.sock").unwrap();
        assert_eq!((unix.len(), host(&unix[0])), (1, None));
        // The same user and password on every node is fine.
        assert_eq!(hosts("redis://app:pw@a:1,redis://app:pw@b:2"), ["a", "b"]);
    }

    #[test]
    fn bad_lists_are_refused_without_their_text() {
        for (value, expect) in [
            ("redis://a:1,,redis://b:2", "entry 2 of 3 is empty"),
            ("redis://a:1,", "entry 2 of 2 is empty"),
            ("", "the URL is empty"),
            ("redis://a:1,b:2", "entry 2 of 2 is not a URL"),
            ("rediss://a:1,redis://b:2", "entry 2 of 2 is a redis:// URL"),
            (
                "redis://a:1,rediss://b:2",
                "all `redis://` or all `rediss://`",
            ),
            (
                "rediss://a:1,rediss://b:2#insecure",
                "entry 2 of 2 has another `#` fragment",
            ),
            (
                "redis://a:1,http://b:2",
                "entry 2 of 2 is not a valid Redis URL",
            ),
            (
                "redis://a:1,redis://b:port",
                "entry 2 of 2 is not a valid URL",
            ),
            (
                "redis://a:1,unix:///x.sock",
                "entry 2 of 2 is a unix:// URL",
            ),
            (
                "redis://a:1/0,redis://b:2/3",
                "another user, password, database",
            ),
            (
                "redis://:s3cret@a:1,redis://:hunter2@b:2",
                "another user, password",
            ),
            ("redis://a:1,redis://:s3cret@b:2", "another user, password"),
        ] {
            let why = parse(value).expect_err(value);
            assert!(why.contains(expect), "{value}: {why}");
            for secret in ["s3cret", "hunter2"] {
                assert!(!why.contains(secret), "{value}: {why}");
            }
        }
        // A password with a raw comma splits the entry: refused, and no piece of it is shown.
        let why = parse("redis://app:pw1,pw2@h:6379").unwrap_err();
        assert!(why.starts_with("entry 1 of 2 is not a valid URL"), "{why}");
        assert!(!why.contains("pw1") && !why.contains("pw2"), "{why}");
    }
}
