//! When a sandbox may answer a grab of a packet it saw sold out or expired without running
//! `grab.lua` (the hottest packet's flash crowd, 99 % of which arrives after the last
//! share is gone).
//!
//! Both states are monotone for an untargeted packet: once every share is grabbed, the packet
//! stays sold out until it expires, and an expired or settled packet never opens again (settle
//! runs only at or after `expires_at`, by Redis `TIME`). So the only per-caller fact still needed
//! is whether the caller won a share (one `HGET` of the grabs hash, answered with the share as
//! `already_grabbed`); everyone else gets `sold_out`, or `expired` once Redis `TIME` has reached
//! `expires_at` ("expired beats sold out", the script's order).
//!
//! The sandbox knows Redis `TIME` only as the script read it, at some instant between sending
//! the call and receiving its answer. [`SoldOutSeen::verdict`] carries that reading forward with
//! the sandbox's monotonic clock into an interval that surely holds Redis `TIME` now, widened
//! by a drift allowance, and answers only when the whole interval is on one side of
//! `expires_at`; otherwise (the last moments before expiry, or a reading older than
//! [`MAX_READING_AGE`]) it says "ask the script", which reads `TIME` afresh. A sold-out reading
//! therefore also lives at most [`MAX_READING_AGE`] before one request re-checks the packet.

use std::time::Duration;

/// How long a Redis `TIME` reading is carried forward before the script is asked again: 5 s.
/// Bounds the drift allowance (monotonic clocks drift by parts per million) and how long a
/// sandbox keeps answering from one observation (after a failover that lost the last grabs,
/// say) before it looks again.
pub const MAX_READING_AGE: Duration = Duration::from_secs(5);

/// Drift allowance: 1 ms, plus 1 ms per second the reading has been carried (1,000 ppm, far
/// above any NTP-disciplined clock's drift).
fn drift_ms(age: Duration) -> i64 {
    1 + (age.as_millis() as i64) / 1000
}

/// What a sandbox may answer a grab of a packet it remembers as gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Sold out and, surely, not yet expired: the caller's share if they won one, else
    /// `sold_out`.
    SoldOut,
    /// Surely expired (or settled): the caller's share if the grabs hash still holds one, else
    /// `expired`.
    Expired,
    /// Too close to `expires_at` to tell, or the reading is too old: run the script.
    AskTheScript,
}

/// A sold-out answer of `grab.lua`: the packet's `expires_at` and the Redis `TIME` the script
/// read, both Unix ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoldOutSeen {
    /// The packet's `expires_at`, Unix ms.
    pub expires_at_ms: i64,
    /// Redis `TIME` when the script ran, Unix ms.
    pub redis_now_ms: i64,
}

impl SoldOutSeen {
    /// The verdict `since_sent` after the grab call that saw it was sent and `since_answered`
    /// after its answer arrived (so `since_sent >= since_answered`).
    ///
    /// Redis `TIME` now lies in `[redis_now + since_answered, redis_now + since_sent]`, widened
    /// by the drift allowance: [`Verdict::Expired`] when the low end is at or past
    /// `expires_at`, [`Verdict::SoldOut`] when the high end is before it, else (or when the
    /// reading is older than [`MAX_READING_AGE`]) [`Verdict::AskTheScript`].
    pub fn verdict(&self, since_sent: Duration, since_answered: Duration) -> Verdict {
        if since_answered > MAX_READING_AGE {
            return Verdict::AskTheScript;
        }
        let drift = drift_ms(since_sent);
        let low = self.redis_now_ms + since_answered.as_millis() as i64 - drift;
        let high = self.redis_now_ms + since_sent.as_millis() as i64 + 1 + drift;
        if low >= self.expires_at_ms {
            Verdict::Expired
        } else if high < self.expires_at_ms {
            Verdict::SoldOut
        } else {
            Verdict::AskTheScript
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn sold_out_until_the_interval_reaches_expires_at() {
        let seen = SoldOutSeen {
            expires_at_ms: 10_000,
            redis_now_ms: 9_000,
        };
        // Fresh: Redis now is in [9000 - 1, 9000 + 0 + 1 + 1].
        assert_eq!(seen.verdict(ms(0), ms(0)), Verdict::SoldOut);
        // 990 ms later, a 5 ms round trip: high end 9000 + 995 + 1 + 1 = 9997 < 10000.
        assert_eq!(seen.verdict(ms(995), ms(990)), Verdict::SoldOut);
        // 998 ms: high end 10000: too close to tell.
        assert_eq!(seen.verdict(ms(998), ms(993)), Verdict::AskTheScript);
        // Low end 9000 + 1001 - 2 = 9999: still not surely expired.
        assert_eq!(seen.verdict(ms(1006), ms(1001)), Verdict::AskTheScript);
        // Low end 9000 + 1002 - 2 = 10000: surely expired.
        assert_eq!(seen.verdict(ms(1007), ms(1002)), Verdict::Expired);
    }

    #[test]
    fn a_slow_answer_widens_the_interval() {
        let seen = SoldOutSeen {
            expires_at_ms: 10_000,
            redis_now_ms: 9_000,
        };
        // The script ran somewhere in a 1,500 ms round trip: Redis may already be at 10,500.
        assert_eq!(seen.verdict(ms(1_500), ms(0)), Verdict::AskTheScript);
    }

    #[test]
    fn an_old_reading_is_not_used() {
        let seen = SoldOutSeen {
            expires_at_ms: i64::MAX / 2,
            redis_now_ms: 0,
        };
        assert_eq!(
            seen.verdict(MAX_READING_AGE, MAX_READING_AGE),
            Verdict::SoldOut
        );
        let older = MAX_READING_AGE + ms(1);
        assert_eq!(seen.verdict(older, older), Verdict::AskTheScript);
    }
}
