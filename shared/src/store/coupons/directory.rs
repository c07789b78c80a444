//! The directory of uploaded codes (code -> its *owner*, sharded by the code's digest): a
//! redeem finds a code's campaign there, and a code belongs to one campaign at a time. The
//! owner is the campaign id for the codes of its creation and `<campaign id>/<batch reference>`
//! for an added batch's, so a retry of the same step finds its own claims, and a code the
//! campaign holds already is a duplicate for any other batch. Creation and added batches check
//! it before writing anything and claim their codes in it.

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::store::{Error, Store};

use super::keys::directory;

/// Directory commands in flight at once.
const IN_FLIGHT: usize = 64;

/// The codes of `codes` (at most 10) that the directory gives to a campaign other than
/// `mine` (the owner this step claims as).
pub(super) async fn owned_elsewhere(
    store: &Store,
    prefix: &str,
    codes: &[String],
    mine: Option<&str>,
) -> Result<Vec<String>, Error> {
    // Over indices, not `&String`s: a closure over borrowed items makes the future
    // higher-ranked, which an axum handler's `Send` bound cannot prove.
    let owners: Vec<(String, Option<String>)> = stream::iter(0..codes.len())
        .map(|i| async move {
            let code = &codes[i];
            let mut conn = store.conn().await?;
            let owner: Option<String> = redis::cmd("HGET")
                .arg(directory(prefix, code))
                .arg(code)
                .query_async(&mut conn)
                .await?;
            Ok::<_, Error>((code.clone(), owner))
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(owners
        .into_iter()
        .filter(|(_, owner)| owner.as_deref().is_some_and(|o| Some(o) != mine))
        .map(|(code, _)| code)
        .take(crate::domain::coupons::codes::MAX_LISTED_DUPLICATES)
        .collect())
}

/// Claims every code of `codes` for `owner` in the directory (`HSETNX`; a code already
/// claimed for `owner`, by an earlier run of the same step, counts as claimed). Returns the
/// codes someone else holds (at most 10); when there are any, the codes this call claimed are
/// released again (`HDEL` of the ones whose `HSETNX` answered 1: nothing else can have claimed
/// them for `owner`).
pub(super) async fn claim(
    store: &Store,
    prefix: &str,
    codes: &[String],
    owner: &str,
) -> Result<Vec<String>, Error> {
    let results: Vec<(String, bool, Option<String>)> = stream::iter(0..codes.len())
        .map(|i| async move {
            let code = &codes[i];
            let mut conn = store.conn().await?;
            let key = directory(prefix, code);
            let set: bool = redis::cmd("HSETNX")
                .arg(&key)
                .arg(code)
                .arg(owner)
                .query_async(&mut conn)
                .await?;
            let held_by: Option<String> = if set {
                None
            } else {
                redis::cmd("HGET")
                    .arg(&key)
                    .arg(code)
                    .query_async(&mut conn)
                    .await?
            };
            Ok::<_, Error>((code.clone(), set, held_by))
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    let clashes: Vec<String> = results
        .iter()
        .filter(|(_, set, held_by)| !set && held_by.as_deref() != Some(owner))
        .map(|(code, _, _)| code.clone())
        .take(crate::domain::coupons::codes::MAX_LISTED_DUPLICATES)
        .collect();
    if !clashes.is_empty() {
        let mine: Vec<&String> = results
            .iter()
            .filter(|(_, set, _)| *set)
            .map(|(c, _, _)| c)
            .collect();
        let mine = &mine;
        stream::iter(0..mine.len())
            .map(|i| async move {
                let code = mine[i];
                let mut conn = store.conn().await?;
                let _: i64 = redis::cmd("HDEL")
                    .arg(directory(prefix, code))
                    .arg(code)
                    .query_async(&mut conn)
                    .await?;
                Ok::<_, Error>(())
            })
            .buffer_unordered(IN_FLIGHT)
            .try_collect::<Vec<()>>()
            .await?;
    }
    Ok(clashes)
}
