//! The business day of the order codes: the local date of an instant in the business zone,
//! counted in days since 1970-01-01, and the [`ZoneWindow`] (offsets and candidate days around
//! the function's clock) that `order_code.lua` decides the day with from Redis `TIME`.

use std::sync::{Arc, Mutex};

use chrono::{Datelike, NaiveDate};

use crate::domain::zone::Zone;
use crate::domain::BadRecord;

/// Half-width of the time window the function sends zone data for, seconds: 6 hours on each
/// side of the start of the hour of its own clock.
pub const WINDOW_SECS: i64 = 6 * 3600;

/// Step of the scan for UTC-offset changes, seconds. Real zones never change their offset
/// twice within an hour; each change found is pinned to the second by bisection.
const SCAN_STEP_SECS: i64 = 3600;

/// Days from 0001-01-01 (day 1 of the common era in chrono's count) to 1970-01-01.
const UNIX_EPOCH_DAYS_FROM_CE: i64 = 719_163;

/// The date of business day `day` (days since 1970-01-01).
///
/// # Errors
/// [`BadRecord`] when `day` is outside chrono's range.
pub fn date_of_day(day: i64) -> Result<NaiveDate, BadRecord> {
    i32::try_from(day + UNIX_EPOCH_DAYS_FROM_CE)
        .ok()
        .and_then(NaiveDate::from_num_days_from_ce_opt)
        .ok_or_else(|| BadRecord(format!("business day {day} is out of range")))
}

/// The number of `date` in days since 1970-01-01.
pub fn day_of_date(date: NaiveDate) -> i64 {
    i64::from(date.num_days_from_ce()) - UNIX_EPOCH_DAYS_FROM_CE
}

/// The UTC offset of `tz` at Unix second `unix_s`, seconds east of UTC (Shanghai: 28,800).
pub fn utc_offset(tz: &Zone, unix_s: i64) -> i32 {
    tz.offset_at(unix_s)
}

/// The business day (local date in `tz`, as days since 1970-01-01) at Unix second `unix_s`.
pub fn local_day(tz: &Zone, unix_s: i64) -> i64 {
    (unix_s + i64::from(utc_offset(tz, unix_s))).div_euclid(86_400)
}

/// The first Unix second of business day `date` in `tz`: local midnight, or, when midnight
/// falls into a gap (a DST change at 24:00, a skipped day), the first local time after it
/// ([`Zone::day_start`]).
pub fn day_start(tz: &Zone, date: NaiveDate) -> i64 {
    tz.day_start(date)
}

/// The zone data the script needs to decide the business day from Redis `TIME` anywhere in
/// `[start, end)`: the UTC offset at `start`, every later change, and the business days
/// (local dates) the window touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneWindow {
    /// First Unix second the data is valid for.
    pub start: i64,
    /// First Unix second past the window.
    pub end: i64,
    /// UTC offset at `start`, seconds east of UTC.
    pub base_offset: i32,
    /// `(instant, offset)`: from Unix second `instant` on, the offset is `offset`; ascending.
    pub transitions: Vec<(i64, i32)>,
    /// The business days (days since 1970-01-01) of the window, ascending, 1 to 3 of them.
    pub days: Vec<i64>,
}

impl ZoneWindow {
    /// The window `[around - 6 h, around + 6 h)` of `tz`, `around` being the function's clock
    /// (Unix seconds). Costs about a dozen zone lookups.
    pub fn around(tz: &Zone, around: i64) -> Self {
        let (start, end) = (around - WINDOW_SECS, around + WINDOW_SECS);
        let base_offset = utc_offset(tz, start);
        let mut transitions = Vec::new();
        let (mut t, mut current) = (start, base_offset);
        while t < end - 1 {
            let next = (t + SCAN_STEP_SECS).min(end - 1);
            if utc_offset(tz, next) == current {
                t = next;
                continue;
            }
            // The offset changes in (t, next]: find the first second of the new offset.
            let (mut lo, mut hi) = (t, next);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if utc_offset(tz, mid) == current {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            current = utc_offset(tz, hi);
            transitions.push((hi, current));
            t = hi;
        }
        let mut window = ZoneWindow {
            start,
            end,
            base_offset,
            transitions,
            days: Vec::new(),
        };
        // Within a stretch of constant offset the local day only grows, so its extremes are at
        // the stretches' ends.
        let mut edges = vec![start, end - 1];
        for &(at, _) in &window.transitions {
            edges.extend([at - 1, at]);
        }
        let days: Vec<i64> = edges.iter().map(|&s| window.day_at(s)).collect();
        let (lo, hi) = (days.iter().min().copied(), days.iter().max().copied());
        window.days = (lo.unwrap_or(0)..=hi.unwrap_or(-1)).collect();
        window
    }

    /// The UTC offset at Unix second `unix_s` by this window's data, as the script picks it.
    pub fn offset_at(&self, unix_s: i64) -> i32 {
        self.transitions
            .iter()
            .rev()
            .find(|(at, _)| unix_s >= *at)
            .map_or(self.base_offset, |&(_, offset)| offset)
    }

    /// The business day at Unix second `unix_s` by this window's data, as the script decides it.
    pub fn day_at(&self, unix_s: i64) -> i64 {
        (unix_s + i64::from(self.offset_at(unix_s))).div_euclid(86_400)
    }
}

/// The zone window around the start of the hour containing `around` (so at least 5 hours
/// either side of `around`), computed once an hour per sandbox and zone.
pub fn window_of_hour(tz: &Zone, around: i64) -> Arc<ZoneWindow> {
    static LAST: Mutex<Option<(Zone, i64, Arc<ZoneWindow>)>> = Mutex::new(None);
    let hour = around.div_euclid(3600) * 3600;
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    match &*last {
        Some((z, h, w)) if z == tz && *h == hour => w.clone(),
        _ => {
            let w = Arc::new(ZoneWindow::around(tz, hour));
            *last = Some((tz.clone(), hour, w.clone()));
            w
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> i64 {
        chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp()
    }

    fn zone(name: &str) -> Zone {
        name.parse().unwrap()
    }

    fn date(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn days_and_dates() {
        assert_eq!(date_of_day(0).unwrap(), date("1970-01-01"));
        assert_eq!(day_of_date(date("2026-11-21")), 20_778);
        assert_eq!(date_of_day(20_778).unwrap(), date("2026-11-21"));
    }

    #[test]
    fn shanghai_has_no_transitions() {
        let tz = &zone("Asia/Shanghai");
        // 2026-11-21 12:00 +08:00.
        let w = ZoneWindow::around(tz, utc("2026-11-21T04:00:00Z"));
        assert_eq!((w.base_offset, w.transitions.clone()), (28_800, vec![]));
        assert_eq!(w.days, vec![day_of_date(date("2026-11-21"))]);
        // Around midnight both days are candidates.
        let w = ZoneWindow::around(tz, utc("2026-11-21T15:59:59Z"));
        assert_eq!(
            w.days,
            vec![
                day_of_date(date("2026-11-21")),
                day_of_date(date("2026-11-22"))
            ]
        );
        assert_eq!(
            w.day_at(utc("2026-11-21T15:59:59Z")),
            day_of_date(date("2026-11-21"))
        );
        assert_eq!(
            w.day_at(utc("2026-11-21T16:00:00Z")),
            day_of_date(date("2026-11-22"))
        );
        assert_eq!(
            day_start(tz, date("2026-11-22")),
            utc("2026-11-21T16:00:00Z")
        );
    }

    #[test]
    fn dst_transitions_are_found_to_the_second() {
        // New York: EDT ends 2026-11-01 02:00 local = 06:00Z.
        let tz = &zone("America/New_York");
        let w = ZoneWindow::around(tz, utc("2026-11-01T05:10:00Z"));
        assert_eq!(w.base_offset, -4 * 3600);
        assert_eq!(
            w.transitions,
            vec![(utc("2026-11-01T06:00:00Z"), -5 * 3600)]
        );
        assert_eq!(w.offset_at(utc("2026-11-01T05:59:59Z")), -4 * 3600);
        assert_eq!(w.offset_at(utc("2026-11-01T06:00:00Z")), -5 * 3600);
        // Santiago: DST ends at 24:00 on 2026-04-04 (03:00Z), back to 23:00; the business day
        // 2026-04-04 lasts 25 hours, until 04:00Z.
        let tz = &zone("America/Santiago");
        let w = ZoneWindow::around(tz, utc("2026-04-05T02:59:00Z"));
        assert_eq!(
            w.transitions,
            vec![(utc("2026-04-05T03:00:00Z"), -4 * 3600)]
        );
        assert_eq!(
            w.day_at(utc("2026-04-05T03:30:00Z")),
            day_of_date(date("2026-04-04"))
        );
        assert_eq!(
            w.day_at(utc("2026-04-05T04:00:00Z")),
            day_of_date(date("2026-04-05"))
        );
        assert_eq!(
            day_start(tz, date("2026-04-05")),
            utc("2026-04-05T04:00:00Z")
        );
        // Santiago: DST starts at 24:00 on 2026-09-05 (04:00Z): midnight does not exist, the
        // day starts at 01:00 local.
        assert_eq!(
            day_start(tz, date("2026-09-06")),
            utc("2026-09-06T04:00:00Z")
        );
        // Lord Howe: a half-hour change (02:00 -> 01:30 local on 2026-04-05, 15:00Z).
        let tz = &zone("Australia/Lord_Howe");
        let w = ZoneWindow::around(tz, utc("2026-04-04T14:00:00Z"));
        assert_eq!(w.base_offset, 11 * 3600);
        assert_eq!(
            w.transitions,
            vec![(utc("2026-04-04T15:00:00Z"), 10 * 3600 + 1800)]
        );
    }

    #[test]
    fn window_days_match_chrono_everywhere() {
        // Zones with DST, half- and quarter-hour offsets, one window every 5 hours over a
        // year: the window's decision equals the zone's local date about once an hour across
        // the whole window.
        let start = utc("2026-01-01T00:00:00Z");
        for tz in &[
            zone("Asia/Shanghai"),
            zone("America/Santiago"),
            zone("America/New_York"),
            zone("Europe/London"),
            zone("Australia/Lord_Howe"),
            zone("Pacific/Chatham"),
            zone("Asia/Kathmandu"),
        ] {
            for k in 0..(365 * 24 / 5) {
                let around = start + k * 5 * 3600;
                let w = ZoneWindow::around(tz, around);
                for s in (w.start..w.end).step_by(3607) {
                    assert_eq!(w.day_at(s), local_day(tz, s), "{tz} at {s}");
                    assert!(w.days.contains(&w.day_at(s)), "{tz} at {s}");
                }
            }
        }
    }
}
