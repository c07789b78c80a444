//! The rules several features share, as pure code: the split algorithms, draws, the money
//! journal's entries, reclaim batches and reconciliation, the re-send horizon, the settings
//! and the business time zone (a feature's own rules are in its `rules/`, e.g.
//! [`crate::packets::rules`]). One file per job.
//!
//! Nothing here knows Redis, HTTP or Lambda: `make test` checks that no file under `domain/`
//! or a feature's `rules/` names `redis`, `lambda_http`, `lambda_runtime`,
//! `aws_lambda_events`, `axum`, `crate::store` or `crate::api`, nor depends on a store or
//! http file (`scripts/check-layers.py`).

pub mod journal;
pub mod reclaim;
pub mod reconcile;
pub mod resend;
pub mod settings;
pub mod split;
pub mod zone;

pub use settings::{ConfigError, Lookup};

/// A request that breaks a rule: the message names the field and the rule (the API answers
/// 400 `invalid_request` with it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    /// An [`Invalid`] with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Invalid(message.into())
    }
}

/// A stored record that does not have the shape the rules write (a bug, or keys written by
/// another program). The store turns it into an internal error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRecord(pub String);

/// The longest user id, in characters.
pub const MAX_USER_ID_CHARS: usize = 255;

/// Whether `id` is a valid user id: 1 to [`MAX_USER_ID_CHARS`] printable characters, i.e. no
/// control character and no invisible format character ([`is_invisible_format`]). Any identity
/// provider's JWT `sub` fits: Cognito's UUIDs, Auth0's `auth0|65f0c1…` and
/// `google-oauth2|1043…`, Okta's `00u1abcd…`, e-mail addresses, names with spaces or any
/// script. The store never puts an id into a key as it is: keys carry an encoded form
/// (`store::keys::user_key_part`) and hash tags a digest (`store::keys::user_tag`).
pub fn is_user_id(id: &str) -> bool {
    !id.is_empty()
        && id.chars().count() <= MAX_USER_ID_CHARS
        && !id.chars().any(|c| c.is_control() || is_invisible_format(c))
}

/// The longest merchant id, in characters.
pub const MAX_MERCHANT_ID_CHARS: usize = 64;

/// Whether `id` is a merchant id: 1 to [`MAX_MERCHANT_ID_CHARS`] characters of
/// `A-Z a-z 0-9 _ . : -` (the team's own ids, `shop-1042`, `ele.me:store:88`). Every merchant
/// id hongbao takes follows this one rule (a budget's, a campaign's `merchant_id`, the `GET
/// /campaigns` query): the id goes into keys and URL paths as it is, with no brace (never a
/// hash tag), no space and no character that needs encoding.
pub fn is_merchant_id(id: &str) -> bool {
    (1..=MAX_MERCHANT_ID_CHARS).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Whether `c` is an invisible format character that shown text must not carry: Unicode
/// general category `Cf` (bidi overrides and isolates U+202A–U+202E and U+2066–U+2069, zero
/// width space U+200B, the marks U+200E/U+200F, word joiner U+2060, BOM U+FEFF, soft hyphen
/// U+00AD, the tag characters U+E0000–U+E007F used for "ASCII smuggling", ...) and the line
/// and paragraph separators U+2028/U+2029 (`Zl`, `Zp`). The zero-width joiner U+200D is
/// allowed: emoji sequences such as 👨‍👩‍👧 need it. Categories from `unicode-properties`
/// (UAX #44).
pub fn is_invisible_format(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    c != '\u{200D}'
        && matches!(
            c.general_category(),
            GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

/// Checks text that other users will see (a greeting, a title): no control character (`Cc`:
/// NUL, line breaks, ESC, DEL, U+0080–U+009F), no invisible format character
/// ([`is_invisible_format`]) and no default-ignorable code point (Unicode's
/// `Default_Ignorable_Code_Point`: the Hangul fillers U+3164, U+115F, U+1160 and U+FFA0, the
/// combining grapheme joiner U+034F, variation selectors, U+180B–U+180F, ...) outside an emoji
/// sequence ([`is_hidden_at`]), so no stored text can reorder, hide or break what is displayed
/// around it (a U+202E "right-to-left override" turns `gnp.exe` into `exe.png`), and no text
/// made only of characters that draw nothing passes as "not blank".
///
/// # Errors
/// [`Invalid`] naming `field` and the first offending character as `U+XXXX`.
pub fn check_shown_text(field: &str, text: &str) -> Result<(), Invalid> {
    let chars: Vec<char> = text.chars().collect();
    match (0..chars.len()).find(|&i| is_hidden_at(&chars, i)) {
        None => Ok(()),
        Some(i) => Err(Invalid(format!(
            "{field} must not contain control, invisible or filler characters (found U+{:04X})",
            chars[i] as u32
        ))),
    }
}

/// Whether `chars[i]` is a character that shown text must not carry ([`check_shown_text`]):
/// a control, an invisible format character, or a default-ignorable code point, except where
/// an emoji sequence needs one (Unicode UTS #51): the zero-width joiner U+200D between two
/// emoji (after an `Extended_Pictographic` character, an `Emoji_Modifier` or U+FE0F, and
/// before an `Extended_Pictographic` one: 👨‍👩‍👧, 🏳️‍🌈) and the variation selectors U+FE0E /
/// U+FE0F right after an `Emoji` character (❤️, 1️⃣). Tag characters (U+E0020–U+E007F) are
/// refused everywhere: they carry invisible ASCII ("ASCII smuggling"), so the three
/// subdivision flags are refused with them. Properties from ICU4X's baked Unicode data.
pub fn is_hidden_at(chars: &[char], i: usize) -> bool {
    use icu_properties::props::{
        DefaultIgnorableCodePoint, Emoji, EmojiModifier, ExtendedPictographic,
    };
    use icu_properties::CodePointSetData;
    let c = chars[i];
    let prev = i.checked_sub(1).map(|p| chars[p]);
    let next = chars.get(i + 1).copied();
    let pictographic = |c: char| CodePointSetData::new::<ExtendedPictographic>().contains(c);
    match c {
        '\u{200D}' => {
            !(prev.is_some_and(|p| {
                pictographic(p)
                    || p == '\u{FE0F}'
                    || CodePointSetData::new::<EmojiModifier>().contains(p)
            }) && next.is_some_and(pictographic))
        }
        '\u{FE0E}' | '\u{FE0F}' => {
            !prev.is_some_and(|p| CodePointSetData::new::<Emoji>().contains(p))
        }
        c => {
            c.is_control()
                || is_invisible_format(c)
                || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        }
    }
}

/// Whether `s` is a valid idempotency key or deposit reference: 1 to 64 visible ASCII
/// characters.
pub fn is_reference(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merchant_ids_are_1_to_64_of_the_safe_characters() {
        for good in [
            "m",
            "shop-1042",
            "ele.me:store:88",
            "A_b.c:d-9",
            &"x".repeat(64),
        ] {
            assert!(is_merchant_id(good), "{good}");
        }
        for bad in [
            "",
            &"x".repeat(65),
            "a b",
            "a/b",
            "a{b}",
            "a%3A",
            "ü",
            "a\n",
        ] {
            assert!(!is_merchant_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn user_ids_and_references() {
        for ok in [
            "alice_01-x",
            "auth0|65f0c1e2d3b4a59687f0e1d2",
            "google-oauth2|104398765432109876543",
            "00u1abcdEFGH2345ijk6",
            "3f2a9c1e-8b7d-4e6f-a5c4-1b2d3e4f5a6b",
            "user@example.com",
            "a{b}:c|d e",
            "é",
            "张伟",
            " ",
        ] {
            assert!(is_user_id(ok), "{ok:?}");
        }
        assert!(is_user_id(&"é".repeat(MAX_USER_ID_CHARS)));
        for bad in ["", "a\nb", "tab\t", "\u{202E}x", "zw\u{200B}", "del\u{7F}"] {
            assert!(!is_user_id(bad), "{bad:?}");
        }
        assert!(!is_user_id(&"a".repeat(MAX_USER_ID_CHARS + 1)));
        assert!(is_reference("order-42/x"));
        for ok in [
            "恭喜发财 👨\u{200D}👩\u{200D}👧 🎉",
            "🏳\u{FE0F}\u{200D}🌈",
            "👩\u{1F3FD}\u{200D}💻",
            "I \u{2764}\u{FE0F} you 1\u{FE0F}\u{20E3}",
            "한국어 제목",
        ] {
            assert!(check_shown_text("greeting", ok).is_ok(), "{ok:?}");
        }
        for bad in [
            "\u{202E}gnp.exe",
            "a\u{0007}",
            "line\nbreak",
            "cr\r",
            "zero\u{200B}width",
            "\u{2066}isolate",
            "bom\u{FEFF}",
            "tag\u{E0041}",
            "sep\u{2028}",
            "c1\u{0085}",
            "nul\0",
            // Hangul fillers, the combining grapheme joiner, a bare zero-width joiner, a lone
            // variation selector: text that draws nothing.
            "\u{3164}",
            "\u{115F}",
            "\u{1160}x",
            "\u{FFA0}",
            "\u{034F}",
            "\u{200D}",
            "a\u{200D}b",
            "\u{FE0F}",
            "x\u{FE0F}",
            "\u{180E}",
            "\u{FE00}",
            "\u{E0100}",
        ] {
            let err = check_shown_text("greeting", bad).unwrap_err();
            assert!(
                err.0.starts_with("greeting must not contain"),
                "{bad:?}: {err}"
            );
        }
        assert!(!is_reference("a b"));
        assert!(!is_reference(&"r".repeat(65)));
    }
}
