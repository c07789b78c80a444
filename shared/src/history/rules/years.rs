//! The business years of the red-packet history: the year of an instant in the business zone,
//! the year bounds a script decides an entry's year with from its Redis `TIME`, and the yearly
//! totals of `GET /packets/summary`.

use chrono::NaiveDate;

use crate::domain::zone::Zone;

/// Count and sum of one list's entries of one year.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Entries.
    pub count: u64,
    /// Sum of `total_cents` (sent) or `amount_cents` (received), cents.
    pub total_cents: i64,
}

/// The yearly summary of a user's history: the entries kept
/// (`HONGBAO_HISTORY_RETENTION_DAYS`) whose time falls in business year `year`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// The business year (in the business zone, `HONGBAO_BUSINESS_TZ`).
    pub year: i32,
    /// Packets sent.
    pub sent: Totals,
    /// Shares claimed.
    pub received: Totals,
}

/// The fields of the totals hash for `year`, in the order `[sent count, sent cents, received
/// count, received cents]`: `<year>:<role>:count` and `<year>:<role>:cents` (written by
/// `lua/history.lua`).
pub fn totals_fields(year: i32) -> [String; 4] {
    [
        format!("{year}:sent:count"),
        format!("{year}:sent:cents"),
        format!("{year}:received:count"),
        format!("{year}:received:cents"),
    ]
}

/// The first Unix ms of business year `year` in `tz`: local midnight of 1 January (or the
/// first local time after it, when a DST change swallows midnight).
pub fn year_start_ms(tz: &Zone, year: i32) -> i64 {
    let jan1 = NaiveDate::from_ymd_opt(year, 1, 1).unwrap_or_default();
    tz.day_start(jan1) * 1000
}

/// The business year in `tz` of Unix ms `at_ms`.
pub fn year_of(tz: &Zone, at_ms: i64) -> i32 {
    tz.year_at(at_ms)
}

/// Three business years around an instant, for a script that decides an entry's year from its
/// own Redis `TIME`: the year of the function's clock and one on each side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YearBounds {
    /// The first of the three years.
    pub first_year: i32,
    /// The start (Unix ms) of each of the three years and of the year after them, ascending.
    pub starts: [i64; 4],
}

impl YearBounds {
    /// The years before, of and after `around_ms` (Unix ms) in `tz`.
    pub fn around(tz: &Zone, around_ms: i64) -> Self {
        let first_year = year_of(tz, around_ms) - 1;
        let mut starts = [0; 4];
        for (i, s) in starts.iter_mut().enumerate() {
            *s = year_start_ms(tz, first_year + i as i32);
        }
        YearBounds { first_year, starts }
    }

    /// The argument `lua/history.lua` reads: `<first_year>:<start1>:<start2>:<start3>:<start4>`.
    pub fn arg(&self) -> String {
        let [a, b, c, d] = self.starts;
        format!("{}:{a}:{b}:{c}:{d}", self.first_year)
    }

    /// The year of `at_ms` by these bounds, as the script decides it (`None` outside them).
    pub fn year_at(&self, at_ms: i64) -> Option<i32> {
        (0..3)
            .find(|&i| self.starts[i] <= at_ms && at_ms < self.starts[i + 1])
            .map(|i| self.first_year + i as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn business_years() {
        let shanghai: Zone = "Asia/Shanghai".parse().unwrap();
        let utc: Zone = "UTC".parse().unwrap();
        // 2025-12-31T16:00:00Z is 2026-01-01 00:00 in Shanghai.
        let new_year = 1_767_196_800_000;
        assert_eq!(year_start_ms(&shanghai, 2026), new_year);
        assert_eq!(year_of(&shanghai, new_year - 1), 2025);
        assert_eq!(year_of(&shanghai, new_year), 2026);
        assert_eq!(year_of(&utc, new_year), 2025);
        let b = YearBounds::around(&shanghai, new_year + 1000);
        assert_eq!(b.first_year, 2025);
        assert_eq!(b.year_at(new_year), Some(2026));
        assert_eq!(b.year_at(new_year - 1), Some(2025));
        assert_eq!(b.year_at(b.starts[0] - 1), None);
        assert_eq!(b.year_at(b.starts[3]), None);
        assert!(b.arg().starts_with("2025:"));
        assert_eq!(totals_fields(2026)[3], "2026:received:cents");
    }
}
