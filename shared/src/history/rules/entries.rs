//! The entries of a user's "sent" and "received" lists, their members in Redis, and the
//! paging cursors over them.
//!
//! Each list is a sorted set on the user's own hash slot whose members all have score 0, so
//! Redis orders them by their bytes (`ZREVRANGEBYLEX`): a member starts with the entry's time
//! as 13 decimal digits (Unix ms, zero-padded) and the packet id, which makes "newest first" a
//! reverse lexicographic range and a cursor a plain bound. The rest of the member is the entry:
//!
//! | list | member |
//! | --- | --- |
//! | sent | `<created_at>:<packet_id>:<year>\|<total_cents>\|<count>\|<mode>[;<opens_at>;<cover>;]\|<expires_at>\|<refunded_cents or empty>\|<greeting>` |
//! | received | `<claimed_at>:<packet_id>:<year>\|<amount_cents>\|<share_id>\|<sender_id>` |
//!
//! The mode field carries `;<opens_at or empty>;<cover or empty>;<flags>` after the mode when
//! the packet was scheduled or has a cover (entries written before those hold the mode alone;
//! flags are lowercase letters: `c` cancelled by the sender, `p` password-protected).
//! `year` is the business year of the entry's time (in the business zone,
//! `HONGBAO_BUSINESS_TZ`), kept so that a pruned entry can be taken out of its year's totals.
//! The greeting and the sender id come last because they may hold `|` or `:`. A user sends a packet once and claims a share of it once,
//! so `<time>:<packet_id>` is unique within a list.

use crate::domain::split::Mode;
use crate::domain::{BadRecord, Invalid};

/// Which of a user's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[schema(description = "A history list's role.")]
pub enum Role {
    /// Red packets the user created (paid for).
    Sent,
    /// Shares the user claimed (money that reached the wallet).
    Received,
}

impl Role {
    /// `sent` or `received` (the API's `role` and the field names of the totals).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Sent => "sent",
            Role::Received => "received",
        }
    }

    /// Parses `sent` or `received`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "sent" => Some(Role::Sent),
            "received" => Some(Role::Received),
            _ => None,
        }
    }

    fn letter(self) -> char {
        match self {
            Role::Sent => 's',
            Role::Received => 'r',
        }
    }
}

/// Where a page of a list ends: the time and packet id of its last entry. Sent to clients as an
/// opaque string ([`Cursor::encode`]); the next page starts strictly after it, so entries added
/// meanwhile (newer, hence before it) never shift a page, and no entry is repeated or skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The list it belongs to.
    pub role: Role,
    /// The last entry's time, Unix ms.
    pub at_ms: i64,
    /// The last entry's packet id.
    pub packet_id: String,
}

impl Cursor {
    /// The cursor after `entry` of list `role`.
    fn after(role: Role, at_ms: i64, packet_id: &str) -> Self {
        Cursor {
            role,
            at_ms,
            packet_id: packet_id.to_string(),
        }
    }

    /// The text clients get: `<s|r><at_ms>-<packet_id>` (e.g. `s1763850000000-…`). Clients
    /// must treat it as opaque.
    pub fn encode(&self) -> String {
        format!("{}{}-{}", self.role.letter(), self.at_ms, self.packet_id)
    }

    /// Parses a cursor of list `role` given back by a client.
    ///
    /// # Errors
    /// [`Invalid`] when `text` is not a cursor this API gave out for that list.
    pub fn parse(role: Role, text: &str) -> Result<Self, Invalid> {
        let bad = || {
            Invalid::new(format!(
                "cursor is not a next_cursor of the {} list",
                role.as_str()
            ))
        };
        let rest = text.strip_prefix(role.letter()).ok_or_else(bad)?;
        let (at, id) = rest.split_once('-').ok_or_else(bad)?;
        let at_ok = (1..=13).contains(&at.len()) && at.bytes().all(|b| b.is_ascii_digit());
        let id_ok = id.len() == 24 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !at_ok || !id_ok {
            return Err(bad());
        }
        Ok(Cursor {
            role,
            at_ms: at.parse().map_err(|_| bad())?,
            packet_id: id.to_string(),
        })
    }

    /// The exclusive upper bound of the next page for `ZREVRANGEBYLEX`: `(<at_ms>:<packet_id>`.
    /// Every member of this entry is longer than the bound and starts with it, so it sorts
    /// after it and is excluded; every older entry sorts before it.
    pub fn lex_bound(&self) -> String {
        format!("({}", member_prefix(self.at_ms, &self.packet_id))
    }
}

/// `<at_ms as 13 digits>:<packet_id>`, the start of an entry's member.
pub fn member_prefix(at_ms: i64, packet_id: &str) -> String {
    format!("{at_ms:013}:{packet_id}")
}

/// One entry of a user's sent list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentEntry {
    /// The packet.
    pub packet_id: String,
    /// Total paid, cents.
    pub total_cents: i64,
    /// Number of shares.
    pub count: u32,
    /// Lucky or fixed.
    pub mode: Mode,
    /// Greeting, if any.
    pub greeting: Option<String>,
    /// Creation time, Unix ms (Redis `TIME`).
    pub created_at_ms: i64,
    /// Deadline for grabs and claims, Unix ms.
    pub expires_at_ms: i64,
    /// Refunded to the sender at settlement, cents; `None` until the packet is settled.
    pub refunded_cents: Option<i64>,
    /// When grabs open, Unix ms: `created_at_ms` unless the packet was scheduled.
    pub opens_at_ms: i64,
    /// The cover id, if any.
    pub cover: Option<String>,
    /// Whether its sender cancelled it (flag `c`; `refunded_cents` then holds the cancel's
    /// refund until settlement).
    pub cancelled: bool,
    /// Whether grabbing it needs its password (flag `p`).
    pub password_protected: bool,
}

/// One entry of a user's received list: a claimed share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedEntry {
    /// The packet.
    pub packet_id: String,
    /// Who paid for the packet.
    pub sender_id: String,
    /// The share, cents.
    pub amount_cents: i64,
    /// 1 for the packet's first share grabbed.
    pub share_id: u32,
    /// When the share was claimed, Unix ms (Redis `TIME` of the packet's node, as the claim
    /// answered it).
    pub claimed_at_ms: i64,
}

/// An entry of either list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Of the sent list.
    Sent(SentEntry),
    /// Of the received list.
    Received(ReceivedEntry),
}

impl Entry {
    /// Parses a member of list `role` (see the module docs).
    ///
    /// # Errors
    /// [`BadRecord`] for any other shape.
    pub fn parse(role: Role, member: &str) -> Result<Self, BadRecord> {
        let bad = || BadRecord(format!("bad {} history entry {member:?}", role.as_str()));
        let mut head = member.splitn(3, ':');
        let at_ms: i64 = head.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
        let packet_id = head.next().ok_or_else(bad)?.to_string();
        let body = head.next().ok_or_else(bad)?;
        let num = |s: Option<&str>| s.and_then(|s| s.parse::<i64>().ok()).ok_or_else(bad);
        Ok(match role {
            Role::Sent => {
                let mut f = body.splitn(7, '|');
                let _year = num(f.next())?;
                let total_cents = num(f.next())?;
                let count = num(f.next())?;
                let field = f.next().ok_or_else(bad)?;
                let (mode, extras) = match field.split_once(';') {
                    None => (field, None),
                    Some((m, rest)) => (m, Some(rest)),
                };
                let mode: Mode = mode.parse().map_err(|_| bad())?;
                let (opens_at_ms, cover, flags) = match extras {
                    None => (at_ms, None, ""),
                    Some(rest) => {
                        let mut x = rest.split(';');
                        let opens = x.next().ok_or_else(bad)?;
                        let cover = x.next().ok_or_else(bad)?;
                        // Flags, one lowercase letter each: `c` cancelled, `p` password.
                        let flags = x.next().ok_or_else(bad)?;
                        if !flags.bytes().all(|b| b.is_ascii_lowercase()) || x.next().is_some() {
                            return Err(bad());
                        }
                        (
                            if opens.is_empty() {
                                at_ms
                            } else {
                                num(Some(opens))?
                            },
                            (!cover.is_empty()).then(|| cover.to_string()),
                            flags,
                        )
                    }
                };
                let expires_at_ms = num(f.next())?;
                let refunded = f.next().ok_or_else(bad)?;
                let greeting = f.next().ok_or_else(bad)?;
                Entry::Sent(SentEntry {
                    packet_id,
                    total_cents,
                    count: u32::try_from(count).map_err(|_| bad())?,
                    mode,
                    greeting: (!greeting.is_empty()).then(|| greeting.to_string()),
                    created_at_ms: at_ms,
                    expires_at_ms,
                    refunded_cents: if refunded.is_empty() {
                        None
                    } else {
                        Some(num(Some(refunded))?)
                    },
                    opens_at_ms,
                    cover,
                    cancelled: flags.contains('c'),
                    password_protected: flags.contains('p'),
                })
            }
            Role::Received => {
                let mut f = body.splitn(4, '|');
                let _year = num(f.next())?;
                let amount_cents = num(f.next())?;
                let share_id = num(f.next())?;
                let sender_id = f.next().ok_or_else(bad)?.to_string();
                Entry::Received(ReceivedEntry {
                    packet_id,
                    sender_id,
                    amount_cents,
                    share_id: u32::try_from(share_id).map_err(|_| bad())?,
                    claimed_at_ms: at_ms,
                })
            }
        })
    }

    /// The cursor that continues after this entry.
    pub fn cursor(&self) -> Cursor {
        match self {
            Entry::Sent(e) => Cursor::after(Role::Sent, e.created_at_ms, &e.packet_id),
            Entry::Received(e) => Cursor::after(Role::Received, e.claimed_at_ms, &e.packet_id),
        }
    }
}

impl ReceivedEntry {
    /// The member of this entry in the received list, `year` being the business year of
    /// `claimed_at_ms` ([`year_of`](super::year_of)).
    pub fn member(&self, year: i32) -> String {
        format!(
            "{}:{year}|{}|{}|{}",
            member_prefix(self.claimed_at_ms, &self.packet_id),
            self.amount_cents,
            self.share_id,
            self.sender_id
        )
    }
}

/// A page of one list, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The entries.
    pub entries: Vec<Entry>,
    /// Where the next page starts; `None` when this page holds the list's last entry.
    pub next_cursor: Option<Cursor>,
}
#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0a1b2c3d4e5f60718293a4b5";

    #[test]
    fn entries_parse_and_order() {
        let sent = format!(
            "{}:2026|1000|3|lucky|1763900000000||a|b:c",
            member_prefix(1_763_850_000_000, ID)
        );
        let Entry::Sent(e) = Entry::parse(Role::Sent, &sent).unwrap() else {
            panic!()
        };
        assert_eq!((e.total_cents, e.count, e.mode), (1000, 3, Mode::Lucky));
        assert_eq!(e.greeting.as_deref(), Some("a|b:c"));
        assert_eq!(
            (e.created_at_ms, e.expires_at_ms, e.refunded_cents),
            (1_763_850_000_000, 1_763_900_000_000, None)
        );
        let settled = sent.replace("000||a", "000|7|a");
        let Entry::Sent(e) = Entry::parse(Role::Sent, &settled).unwrap() else {
            panic!()
        };
        assert_eq!(e.refunded_cents, Some(7));
        assert_eq!(
            (e.opens_at_ms, e.cover.as_deref()),
            (1_763_850_000_000, None)
        );
        // A scheduled packet with a cover; a cover alone.
        let scheduled = sent.replace("|lucky|", "|lucky;1763860000000;gold-2026;|");
        let Entry::Sent(e) = Entry::parse(Role::Sent, &scheduled).unwrap() else {
            panic!()
        };
        assert_eq!(
            (e.mode, e.opens_at_ms, e.cover.as_deref()),
            (Mode::Lucky, 1_763_860_000_000, Some("gold-2026"))
        );
        let covered = sent.replace("|lucky|", "|fixed;;c.1;|");
        let Entry::Sent(e) = Entry::parse(Role::Sent, &covered).unwrap() else {
            panic!()
        };
        assert_eq!(
            (e.mode, e.opens_at_ms, e.cover.as_deref()),
            (Mode::Fixed, 1_763_850_000_000, Some("c.1"))
        );
        let flagged = sent.replace("|lucky|", "|lucky;;;cp|");
        let Entry::Sent(e) = Entry::parse(Role::Sent, &flagged).unwrap() else {
            panic!()
        };
        assert!(e.cancelled && e.password_protected);
        for bad in ["|lucky;x;;|", "|lucky;;|", "|lucky;;a;B|", "|lucky;;a;b;|"] {
            assert!(
                Entry::parse(Role::Sent, &sent.replace("|lucky|", bad)).is_err(),
                "{bad}"
            );
        }

        let r = ReceivedEntry {
            packet_id: ID.into(),
            sender_id: "auth0|x:y".into(),
            amount_cents: 42,
            share_id: 3,
            claimed_at_ms: 5,
        };
        let m = r.member(1970);
        assert_eq!(m, format!("0000000000005:{ID}:1970|42|3|auth0|x:y"));
        assert_eq!(
            Entry::parse(Role::Received, &m).unwrap(),
            Entry::Received(r.clone())
        );
        let c = Entry::Received(r).cursor();
        assert_eq!(Cursor::parse(Role::Received, &c.encode()).unwrap(), c);
        // The bound excludes its own entry and keeps older ones (byte order, as ZREVRANGEBYLEX).
        let bound = &c.lex_bound()[1..];
        assert!(m.as_str() > bound);
        assert!(format!("0000000000005:{}", "0".repeat(24)).as_str() < bound);
        assert!("0000000000004:ffffffffffffffffffffffff:" < bound);

        for bad in ["", "x", &sent[..20], "0000000000005:id:notayear|1|2|x"] {
            assert!(Entry::parse(Role::Received, bad).is_err(), "{bad:?}");
        }
        assert!(Entry::parse(Role::Sent, &format!("1:{ID}:2026|1|1|odd|1||")).is_err());
    }

    #[test]
    fn cursors_are_checked() {
        let c = format!("s1763850000000-{ID}");
        assert_eq!(
            Cursor::parse(Role::Sent, &c).unwrap().at_ms,
            1_763_850_000_000
        );
        for bad in [
            c.replacen('s', "r", 1),
            String::new(),
            "s".into(),
            format!("s-{ID}"),
            format!("s17638500000000-{ID}"),
            format!("s1x-{ID}"),
            format!("s1-{}", &ID[1..]),
            format!("s1-{}", ID.to_uppercase()),
            format!("s1-{ID}-"),
        ] {
            assert!(Cursor::parse(Role::Sent, &bad).is_err(), "{bad:?}");
        }
    }
}
