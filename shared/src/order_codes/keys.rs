//! The order codes' keys: every key carries the hash tag `{oc}` (see the
//! [module docs](super)).

use chrono::{Datelike, NaiveDate};

use crate::store::keys::user_key_part;

/// The key of business day `date`'s hash (one field: the day's secret -> positions taken).
pub fn day_key(prefix: &str, date: NaiveDate) -> String {
    format!(
        "{prefix}:{{oc}}:day:{:04}{:02}{:02}",
        date.year(),
        date.month(),
        date.day()
    )
}

/// The key of `user_id`'s codes taken on business day `date` (a counter of
/// `lua/quota.lua` that expires with the day hash; `HONGBAO_ORDER_CODES_PER_USER_PER_DAY`).
pub fn quota_key(prefix: &str, date: NaiveDate, user_id: &str) -> String {
    format!(
        "{prefix}:{{oc}}:quota:{:04}{:02}{:02}:{}",
        date.year(),
        date.month(),
        date.day(),
        user_key_part(user_id)
    )
}

/// The key of the high-water mark: the newest business day (days since 1970-01-01) that got
/// a day hash.
pub fn newest_day_key(prefix: &str) -> String {
    format!("{prefix}:{{oc}}:newest_day")
}
