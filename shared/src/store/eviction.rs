//! The eviction check: what the server's `maxmemory-policy` means for money. Balances,
//! idempotency and transfer records have no TTL; a call's kept answer, a coupon pool and a
//! settled packet's records have one, and each guards a scarce thing. So an `allkeys-*` or a
//! `volatile-*` policy stops a function at Init (`volatile-*` on ElastiCache Serverless, whose
//! policy no one sets: a warning), and `noeviction` (full memory refuses writes: 503) is what
//! the template deploys.

use redis::Value;

use super::error::Error;
use super::lazy_store::Store;

/// What the server's `maxmemory-policy` means for money (see [`Store::check_eviction_policy`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionVerdict {
    /// `noeviction` (or a policy this code does not know): full memory refuses writes (503),
    /// nothing is evicted.
    Safe(String),
    /// `volatile-*`: only keys with a TTL can be evicted. Balances and idempotency records have
    /// none, but a call's kept answer (`<entity>:call:<call id>`, kept the re-send horizon) has
    /// one: evicted early, a checkout call re-sent within the horizon could apply again; a
    /// coupon pool's codes and a settled packet's records can vanish early. The functions
    /// refuse to start (on ElastiCache Serverless: a warning).
    Volatile(String),
    /// `allkeys-*`: any key, a wallet included, can be evicted. The functions refuse to start.
    AllKeys(String),
    /// `INFO` is not allowed (an ACL without `+info`, a managed service that hides it).
    Unknown(String),
}

/// Classifies a `maxmemory-policy` value.
pub(crate) fn eviction_verdict(policy: &str) -> EvictionVerdict {
    let p = policy.trim().to_ascii_lowercase();
    if p.starts_with("allkeys-") {
        EvictionVerdict::AllKeys(p)
    } else if p.starts_with("volatile-") {
        EvictionVerdict::Volatile(p)
    } else {
        EvictionVerdict::Safe(p)
    }
}

/// Every `maxmemory_policy:` value in an `INFO` reply (one per node on a cluster).
fn policies_in(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::BulkString(b) => policies_in_text(&String::from_utf8_lossy(b), out),
        Value::VerbatimString { text, .. } | Value::SimpleString(text) => {
            policies_in_text(text, out)
        }
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|v| policies_in(v, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(_, v)| policies_in(v, out)),
        _ => {}
    }
}

fn policies_in_text(text: &str, out: &mut Vec<String>) {
    out.extend(
        text.lines()
            .filter_map(|l| l.strip_prefix("maxmemory_policy:"))
            .map(|p| p.trim().to_string()),
    );
}

impl Store {
    /// Reads `maxmemory_policy` from `INFO memory` (every master on a cluster) and classifies
    /// the worst one. Money-guarding state (balances, idempotency and transfer records) must
    /// never be evicted: `allkeys-*` policies can evict any key.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when Redis cannot be reached. An `INFO` the server refuses is
    /// [`EvictionVerdict::Unknown`], not an error.
    pub async fn check_eviction_policy(&self) -> Result<EvictionVerdict, Error> {
        let mut conn = self.conn().await?;
        let reply = match redis::cmd("INFO")
            .arg("memory")
            .query_async::<Value>(&mut conn)
            .await
        {
            Ok(v) => v,
            Err(e)
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    || e.to_string().contains("NOPERM") =>
            {
                return Ok(EvictionVerdict::Unknown(e.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        let mut found = Vec::new();
        policies_in(&reply, &mut found);
        let verdicts: Vec<EvictionVerdict> = found.iter().map(|p| eviction_verdict(p)).collect();
        Ok(verdicts
            .iter()
            .find(|v| matches!(v, EvictionVerdict::AllKeys(_)))
            .or_else(|| {
                verdicts
                    .iter()
                    .find(|v| matches!(v, EvictionVerdict::Volatile(_)))
            })
            .or(verdicts.first())
            .cloned()
            .unwrap_or_else(|| EvictionVerdict::Unknown("no maxmemory_policy in INFO".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_policies() {
        assert!(matches!(
            eviction_verdict("allkeys-lru"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("allkeys-lfu"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("allkeys-random"),
            EvictionVerdict::AllKeys(_)
        ));
        assert!(matches!(
            eviction_verdict("volatile-ttl"),
            EvictionVerdict::Volatile(_)
        ));
        assert!(matches!(
            eviction_verdict("noeviction"),
            EvictionVerdict::Safe(_)
        ));
        let mut out = Vec::new();
        policies_in(
            &Value::Map(vec![
                (
                    Value::SimpleString("a:1".into()),
                    Value::BulkString(b"# Memory\r\nmaxmemory_policy:noeviction\r\n".to_vec()),
                ),
                (
                    Value::SimpleString("b:2".into()),
                    Value::VerbatimString {
                        format: redis::VerbatimFormat::Text,
                        text: "maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n".into(),
                    },
                ),
            ]),
            &mut out,
        );
        assert_eq!(out, ["noeviction", "allkeys-lru"]);
    }
}
