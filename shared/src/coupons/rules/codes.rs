//! Uploaded coupon codes: the characters a merchant's code may use, and the duplicates a batch
//! may not carry.

use std::collections::HashSet;

use crate::domain::Invalid;

/// The shortest uploaded code, in characters.
pub const MIN_CODE_CHARS: usize = 4;

/// The longest uploaded code, in characters.
pub const MAX_CODE_CHARS: usize = 64;

/// The most codes one request uploads (`POST /campaigns` with `codes`, or one batch of
/// `POST /campaigns/{id}/codes`).
pub const MAX_CODES_PER_BATCH: usize = 10_000;

/// The most duplicates an answer lists (`duplicate_codes`).
pub const MAX_LISTED_DUPLICATES: usize = 10;

/// Whether `code` is a valid uploaded code: [`MIN_CODE_CHARS`] to [`MAX_CODE_CHARS`] characters
/// of `[A-Za-z0-9_-]`. Case matters (`abcd` and `ABCD` are two codes). The alphabet keeps a
/// code safe in a key, a hash field, a URL and a log line as it is.
pub fn is_code(code: &str) -> bool {
    (MIN_CODE_CHARS..=MAX_CODE_CHARS).contains(&code.len())
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks a batch of uploaded codes: 1 to [`MAX_CODES_PER_BATCH`] codes, each [`is_code`].
///
/// # Errors
/// [`Invalid`] naming the first code that breaks the rule (its position, and the code itself
/// when it is printable in a message).
pub fn check_batch(codes: &[String]) -> Result<(), Invalid> {
    if codes.is_empty() || codes.len() > MAX_CODES_PER_BATCH {
        return Err(Invalid::new(format!(
            "codes must hold 1 to {MAX_CODES_PER_BATCH} codes, not {}",
            codes.len()
        )));
    }
    if let Some((i, code)) = codes.iter().enumerate().find(|(_, c)| !is_code(c)) {
        let shown = if code.len() <= MAX_CODE_CHARS * 2 && !code.chars().any(char::is_control) {
            format!(" ({code:?})")
        } else {
            String::new()
        };
        return Err(Invalid::new(format!(
            "codes[{i}]{shown} must be {MIN_CODE_CHARS} to {MAX_CODE_CHARS} characters of \
             [A-Za-z0-9_-]"
        )));
    }
    Ok(())
}

/// The codes that appear more than once in `codes`, each once, in order of their second
/// appearance, at most [`MAX_LISTED_DUPLICATES`]; empty when every code is distinct.
pub fn duplicates_within(codes: &[String]) -> Vec<String> {
    let mut seen = HashSet::with_capacity(codes.len());
    let mut listed = HashSet::new();
    let mut dups = Vec::new();
    for code in codes {
        if !seen.insert(code.as_str()) && listed.insert(code.as_str()) {
            dups.push(code.clone());
            if dups.len() == MAX_LISTED_DUPLICATES {
                break;
            }
        }
    }
    dups
}

/// A batch's fingerprint, stored with its reference so a retry of the same batch is told from
/// another batch under the same reference: `v1:` and the SHA-256 hex of the codes as
/// netstrings (`<byte length>:<bytes>,`), in order.
pub fn batch_fingerprint(codes: &[String]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let mut hasher = Sha256::new();
    for code in codes {
        hasher.update(format!("{}:{code},", code.len()).as_bytes());
    }
    let mut out = String::from("v1:");
    for b in hasher.finalize() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(codes: &[&str]) -> Vec<String> {
        codes.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn the_alphabet_and_lengths() {
        for ok in ["abcd", "SAVE-20_off", &"x".repeat(64), "0000"] {
            assert!(is_code(ok), "{ok}");
        }
        for bad in [
            "abc",
            &"x".repeat(65),
            "a b c d",
            "abc:",
            "ab{c}",
            "coupon€",
            "ab\ncd",
            "",
        ] {
            assert!(!is_code(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_batch_names_the_bad_code() {
        assert!(check_batch(&v(&["abcd", "efgh"])).is_ok());
        assert!(check_batch(&[]).is_err());
        assert!(check_batch(&vec!["abcd".to_string(); 10_001]).is_err());
        let err = check_batch(&v(&["abcd", "no way"])).unwrap_err();
        assert!(err.0.starts_with("codes[1] (\"no way\")"), "{err}");
    }

    #[test]
    fn batch_fingerprints() {
        let a = batch_fingerprint(&v(&["abcd", "efgh"]));
        assert_eq!(a, batch_fingerprint(&v(&["abcd", "efgh"])));
        assert_ne!(a, batch_fingerprint(&v(&["efgh", "abcd"])));
        assert_ne!(a, batch_fingerprint(&v(&["abcde", "fgh"])));
        assert!(a.starts_with("v1:") && a.len() == 67);
    }

    #[test]
    fn duplicates_are_listed_once_and_at_most_ten() {
        assert!(duplicates_within(&v(&["abcd", "ABCD", "abce"])).is_empty());
        assert_eq!(
            duplicates_within(&v(&["abcd", "efgh", "abcd", "abcd", "efgh"])),
            v(&["abcd", "efgh"])
        );
        let many: Vec<String> = (0..30).map(|i| format!("code{}", i % 15)).collect();
        assert_eq!(duplicates_within(&many).len(), 10);
    }
}
