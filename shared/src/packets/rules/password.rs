//! Password packets (口令红包): a sender locks a packet with a phrase that grabbers must type.
//!
//! The phrase is NFC-normalised (so "é" typed as one code point or as "e" + U+0301 is the same
//! password), 1 to [`MAX_PASSWORD_CHARS`] characters, compared case-sensitively. It is never
//! stored, logged, returned or journaled: the packet keeps only its verifier, HMAC-SHA256 keyed
//! with a per-packet salt (`hongbao-password-v1:<packet_id>`: the packet id holds 80 bits drawn
//! from a CSPRNG per packet, so no two packets share a salt and no table of guesses serves two
//! packets), and a grab sends the verifier of what the grabber typed, which `grab.lua`
//! compares. The salt is derived, not stored, so a grab computes the verifier without reading
//! the packet first (one round trip, as for any grab). The verifier, like the create request's
//! fingerprint (which records only that a password was given), never reaches a response, a log
//! line or a journal entry; a wrong guess costs an attempt of the grab rate limit and counts
//! toward the packet's guess budget (`HONGBAO_GUESS_BUDGET`, `grab.lua`).

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

use crate::domain::{is_hidden_at, Invalid};

/// The longest password, characters (after NFC normalisation).
pub const MAX_PASSWORD_CHARS: usize = 32;

/// The domain-separation prefix of a verifier's key.
pub const PASSWORD_KEY_PREFIX: &str = "hongbao-password-v1:";

/// A password as a client sent it (a create's `password`, a grab's body). Its `Debug` never
/// shows the text, so no log line of a request can carry it.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct PasswordText(String);

impl std::fmt::Debug for PasswordText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordText(<redacted>)")
    }
}

impl PasswordText {
    /// The text NFC-normalised, as a grab compares it (no length rule: a wrong or overlong
    /// guess is simply not the password).
    pub fn normalised(&self) -> Password {
        Password(nfc(&self.0))
    }

    /// Checks a sender's password: NFC-normalised, 1 to [`MAX_PASSWORD_CHARS`] characters,
    /// none of them a control, invisible or filler character (people type it in a chat).
    ///
    /// # Errors
    /// [`Invalid`] saying which rule (never echoing the text).
    pub fn check(&self) -> Result<Password, Invalid> {
        let text = nfc(&self.0);
        let chars: Vec<char> = text.chars().collect();
        if !(1..=MAX_PASSWORD_CHARS).contains(&chars.len()) {
            return Err(Invalid(format!(
                "password must be 1 to {MAX_PASSWORD_CHARS} characters (after NFC normalisation)"
            )));
        }
        if text.trim().is_empty() || (0..chars.len()).any(|i| is_hidden_at(&chars, i)) {
            return Err(Invalid::new(
                "password must be visible text: no control, invisible or filler character, not only spaces",
            ));
        }
        Ok(Password(text))
    }
}

/// An NFC-normalised password. Its `Debug` never shows the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

impl Password {
    /// The verifier of this password for packet `packet_id`: 64 lowercase hex digits of
    /// HMAC-SHA256 with key `hongbao-password-v1:<packet_id>` over the NFC text.
    pub fn verifier(&self, packet_id: &str) -> String {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(format!("{PASSWORD_KEY_PREFIX}{packet_id}").as_bytes())
                .expect("HMAC takes a key of any length");
        mac.update(self.0.as_bytes());
        mac.finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

fn nfc(text: &str) -> String {
    icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
        .normalize(text)
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> PasswordText {
        PasswordText(s.to_string())
    }

    #[test]
    fn normalised_case_sensitive_and_salted_per_packet() {
        let composed = text("café 恭喜").check().unwrap();
        let decomposed = text("cafe\u{301} 恭喜").check().unwrap();
        assert_eq!(composed, decomposed);
        assert_eq!(composed.verifier("p1"), decomposed.verifier("p1"));
        assert_ne!(
            composed.verifier("p1"),
            text("Café 恭喜").check().unwrap().verifier("p1")
        );
        assert_ne!(composed.verifier("p1"), composed.verifier("p2"));
        assert_eq!(composed.verifier("p1").len(), 64);
        // Known answer: python3 -c 'import hmac,hashlib; print(hmac.new(
        //   b"hongbao-password-v1:p1", "open sesame".encode(), hashlib.sha256).hexdigest())'
        assert_eq!(
            text("open sesame").check().unwrap().verifier("p1"),
            "4f3870bba5ac8e98273fb57cae1ac74b029a886a8c45c15cf3726340494a5531"
        );
    }

    #[test]
    fn bounds_and_redaction() {
        assert!(text(&"x".repeat(32)).check().is_ok());
        assert!(text(&"字".repeat(32)).check().is_ok());
        for bad in [
            "",
            "   ",
            &"x".repeat(33),
            "a\nb",
            "\u{3164}",
            "pass\u{200b}word",
        ] {
            let err = text(bad).check().unwrap_err();
            assert!(bad.is_empty() || !err.0.contains(bad), "{err}");
        }
        assert_eq!(format!("{:?}", text("secret")), "PasswordText(<redacted>)");
        assert_eq!(
            format!("{:?}", text("secret").check().unwrap()),
            "Password(<redacted>)"
        );
    }
}
