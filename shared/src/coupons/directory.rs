//! The directory of uploaded codes (code -> its *owner*, sharded by the code's digest): a
//! redeem finds a code's campaign there, and a code belongs to one campaign at a time. The
//! owner is the campaign id for the codes of its creation and `<campaign id>/<batch reference>`
//! for an added batch's. Creation and added batches read it before writing anything
//! (`owners`), claim their codes in it (`claim`, `coupon_directory_add.lua`: first writer wins,
//! a re-sent claim answers the same owner), record the claims' one outcome, and release them
//! only on that outcome: every code of a refused creation or batch, or the share of a pool a
//! batch missed (`release`, `coupon_directory_remove.lua`: only the owner's claim).

use crate::store::scripts::{CouponDirectoryAddCall, CouponDirectoryRemoveCall};
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::coupons::rules::codes::MAX_LISTED_DUPLICATES;
use crate::store::scripts::{text, Call};
use crate::store::{Error, Store};

use crate::coupons::keys::directory;

/// Directory calls in flight at once.
const IN_FLIGHT: usize = 64;

/// What the directory says of a request's codes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Owners {
    /// The codes another owner holds (at most 10).
    pub elsewhere: Vec<String>,
    /// Whether some code is `mine`'s already (an earlier run of the step claimed it).
    pub any_mine: bool,
}

/// Reads the owners of `codes`, as seen by owner `mine` (the owner this step claims as).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached.
pub(super) async fn owners(
    store: &Store,
    prefix: &str,
    codes: &[String],
    mine: Option<&str>,
) -> Result<Owners, Error> {
    // Over indices, not `&String`s: a closure over borrowed items makes the future
    // higher-ranked, which an axum handler's `Send` bound cannot prove.
    let owners: Vec<Option<String>> = stream::iter(0..codes.len())
        .map(|i| async move {
            let code = &codes[i];
            let mut conn = store.conn().await?;
            let owner: Option<String> = redis::cmd("HGET")
                .arg(directory(prefix, code))
                .arg(code)
                .query_async(&mut conn)
                .await?;
            Ok::<_, Error>(owner)
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    let mut out = Owners::default();
    for (code, owner) in codes.iter().zip(owners) {
        match owner {
            Some(o) if Some(o.as_str()) == mine => out.any_mine = true,
            Some(_) if out.elsewhere.len() < MAX_LISTED_DUPLICATES => {
                out.elsewhere.push(code.clone());
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Claims every code of `codes` for `owner` (`coupon_directory_add.lua`). Returns the codes
/// another owner holds (at most 10); releases nothing: the caller records the claims' outcome
/// first, then releases on it ([`release`]).
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the claims may be sent again: a code
/// claimed for `owner` answers `owner`); [`Error::Internal`] for a reply of the wrong facts.
pub(super) async fn claim(
    store: &Store,
    prefix: &str,
    codes: &[String],
    owner: &str,
) -> Result<Vec<String>, Error> {
    let held_by: Vec<String> = stream::iter(0..codes.len())
        .map(|i| async move {
            let code = &codes[i];
            let mut conn = store.conn().await?;
            let reply = CouponDirectoryAddCall {
                claims: &directory(prefix, code),
                field: code,
                value: owner,
            }
            .invocation()
            .invoke_async(&mut conn)
            .await?;
            text("coupon_directory_add", reply)
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    Ok(codes
        .iter()
        .zip(held_by)
        .filter(|(_, held_by)| held_by != owner)
        .map(|(code, _)| code.clone())
        .take(MAX_LISTED_DUPLICATES)
        .collect())
}

/// Releases the directory claims of `codes` that are `owner`'s (`coupon_directory_remove.lua`);
/// another owner's claim stays. Call it only on a recorded outcome that says these codes will
/// never be in a pool for `owner`.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the release may run again: it
/// changes nothing the second time); [`Error::Internal`] for a reply of the wrong facts.
pub(super) async fn release<S: AsRef<str> + Sync>(
    store: &Store,
    prefix: &str,
    codes: &[S],
    owner: &str,
) -> Result<(), Error> {
    stream::iter(0..codes.len())
        .map(|i| async move {
            let code = codes[i].as_ref();
            let mut conn = store.conn().await?;
            let reply = CouponDirectoryRemoveCall {
                directory: &directory(prefix, code),
                code,
                owner,
            }
            .invocation()
            .invoke_async(&mut conn)
            .await?;
            text("coupon_directory_remove", reply).map(drop)
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await?;
    Ok(())
}
