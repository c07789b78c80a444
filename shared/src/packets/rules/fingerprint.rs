//! The fingerprint of a create request, stored with its `Idempotency-Key` so that a key reused
//! with another request is told apart (409 `idempotency_key_reused`) while a retry of the same
//! request finds its packet.

use super::limits::NewPacket;

/// The prefix of a [`NewPacket::fingerprint`] in its current (v2) encoding.
pub const FINGERPRINT_V2: &str = "v2:";

impl NewPacket {
    /// The request's fingerprint, stored with its `Idempotency-Key` so that a reused key with
    /// another body is told apart (409 `idempotency_key_reused`): `v2:` and the SHA-256 hex of
    /// a canonical encoding that is injective by construction. Every field is a netstring
    /// (`<byte length>:<bytes>,`, D. J. Bernstein's netstrings), in a fixed order: total,
    /// count, mode, split (empty for fixed), expiry, the greeting after a presence tag (`0`, or
    /// `1` and the greeting), the number of recipients and each recipient (sorted, distinct),
    /// then each later field that is not at its default as a tag and a value
    /// (`opens_in_secs`, `cover`, a password's presence, a draw's `entry_secs`).
    /// A field's length says where it ends, so no greeting or user id can pass for another
    /// field, whatever characters it holds (in v1, a greeting `hi|alice` and a greeting `hi`
    /// for recipient `alice` had the same fingerprint).
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write;
        let mut canonical = String::new();
        let mut put = |field: &str| {
            let _ = write!(canonical, "{}:{},", field.len(), field);
        };
        put(&self.total_cents.to_string());
        put(&self.count.to_string());
        put(self.mode.as_str());
        put(self.split_name().unwrap_or(""));
        put(&self.expires_in_secs.to_string());
        match &self.greeting {
            None => put("0"),
            Some(greeting) => {
                put("1");
                put(greeting);
            }
        }
        put(&self.recipients.len().to_string());
        for recipient in &self.recipients {
            put(recipient);
        }
        // Fields added later follow as tagged pairs, only when they differ from their
        // default, so a request without them keeps the fingerprint earlier releases stored
        // (a create retried across the upgrade still finds its packet).
        if self.opens_in_secs != 0 {
            put("opens_in_secs");
            put(&self.opens_in_secs.to_string());
        }
        if let Some(cover) = &self.cover {
            put("cover");
            put(cover);
        }
        // Only that there is a password: the password itself is stored nowhere but as the
        // packet's verifier, and a repeat compares against that (`store::packets::create`).
        if self.password.is_some() {
            put("password");
        }
        if let Some(draw) = &self.draw {
            put("draw_entry_secs");
            put(&draw.entry_secs.to_string());
        }
        let mut out = String::from(FINGERPRINT_V2);
        for b in Sha256::digest(canonical.as_bytes()) {
            let _ = write!(out, "{b:02x}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::split::{LuckySplit, Mode};

    #[test]
    fn fingerprint_depends_on_every_field() {
        let a = NewPacket {
            total_cents: 100,
            count: 2,
            mode: Mode::Lucky,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 60,
            greeting: None,
            recipients: Vec::new(),
            opens_in_secs: 0,
            cover: None,
            password: None,
            draw: None,
        };
        let mut b = a.clone();
        b.greeting = Some(String::new());
        assert_ne!(a.fingerprint(), b.fingerprint());
        let mut c = a.clone();
        c.split = LuckySplit::LineCut;
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
        assert!(a.fingerprint().starts_with(FINGERPRINT_V2));
        // A request without the later fields keeps the v2 fingerprint releases before them
        // stored: SHA-256 of "3:100,1:2,5:lucky,11:double_mean,2:60,1:0,1:0," (Python's
        // hashlib).
        assert_eq!(
            a.fingerprint(),
            "v2:139ff707d95a2bcb7a215400ed487e77625fafb8399f0880472eb56b463e36cc"
        );
        let mut d = a.clone();
        d.opens_in_secs = 60;
        let mut e = a.clone();
        e.cover = Some("60".into());
        let mut f = a.clone();
        f.expires_in_secs = 120;
        let all = [&a, &b, &c, &d, &e, &f].map(NewPacket::fingerprint);
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
    }

    /// The v1 collision: a greeting holding the separator of the v1 text, against a
    /// targeted packet; and the like between recipients and greetings.
    #[test]
    fn fingerprint_is_injective_where_v1_collided() {
        let base = NewPacket {
            total_cents: 100,
            count: 1,
            mode: Mode::Lucky,
            split: LuckySplit::DoubleMean,
            expires_in_secs: 86_400,
            greeting: Some("hi|alice".into()),
            recipients: Vec::new(),
            opens_in_secs: 0,
            cover: None,
            password: None,
            draw: None,
        };
        let targeted = NewPacket {
            greeting: Some("hi".into()),
            recipients: vec!["alice".into()],
            ..base.clone()
        };
        let shifted = NewPacket {
            greeting: Some("hi|x".into()),
            recipients: vec!["y".into()],
            ..base.clone()
        };
        let piped_id = NewPacket {
            greeting: Some("hi".into()),
            recipients: vec!["x|y".into()],
            ..base.clone()
        };
        let fps = [&base, &targeted, &shifted, &piped_id].map(NewPacket::fingerprint);
        for (i, a) in fps.iter().enumerate() {
            for b in &fps[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
