//! Generated coupon codes: unguessable, never repeated within a campaign, checkable for typos,
//! and never stored before they are issued.
//!
//! A generated code is 18 characters of Crockford's base 32 (`0-9A-Z` without `I L O U`):
//!
//! | characters | bits | contents |
//! | --- | --- | --- |
//! | 1-5 | 25 | the campaign number (its `campaign_id`), so a code names its campaign |
//! | 6-17 | 60 | `E_k(index)`: the code's index in the campaign (`0 .. generate`) under the campaign's keyed permutation |
//! | 18 | 5 | a Luhn mod 32 check character over characters 1-17 |
//!
//! `E_k` is a balanced Feistel network over 60 bits (two 30-bit halves, 10 rounds as in NIST
//! FF1) whose round function is HMAC-SHA-256 under the campaign's 128-bit secret `k`, which
//! never leaves Redis and the functions. It is a bijection of `[0, 2^60)`, so distinct indices
//! give distinct codes, and a pseudo-random one: a code (or a thousand) tells nothing about
//! another. A grab takes the next index of its pool (a counter in Redis) and the function
//! computes the code; a redeem runs `E_k^-1` and accepts only an index below the campaign's
//! count, so a guessed code is valid with probability `generate / 2^60` (below 10^-11 for
//! 10,000,000 codes), and a typo (one character changed, or two adjacent ones swapped) fails
//! the check character first (Luhn mod N, N = 32, catches every single substitution and most
//! adjacent swaps). Redeem accepts lower case, `-` and spaces between groups, and reads `I`/`L`
//! as `1` and `O` as `0`, as Crockford's decoding does.

use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;

use crate::domain::BadRecord;

/// Crockford's base-32 alphabet: digit value = position.
pub const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// Characters of the campaign number at the start of a generated code.
pub const CAMPAIGN_CHARS: usize = 5;

/// The largest campaign number: 32^5 - 1.
pub const MAX_CAMPAIGN_NO: u64 = (1 << (5 * CAMPAIGN_CHARS)) - 1;

/// Characters of the permuted index.
const VALUE_CHARS: usize = 12;

/// Bits of the permuted index space.
const VALUE_BITS: u32 = 60;

/// Characters of a generated code.
pub const CODE_CHARS: usize = CAMPAIGN_CHARS + VALUE_CHARS + 1;

/// The most codes a campaign may generate.
pub const MAX_GENERATED: u64 = 10_000_000;

/// Feistel rounds (NIST SP 800-38G FF1 uses 10).
const ROUNDS: u8 = 10;

/// One 30-bit half.
const HALF_MASK: u64 = (1 << (VALUE_BITS / 2)) - 1;

/// A new campaign secret: 128 bits from the thread CSPRNG (ChaCha, OS-seeded) as 32 lowercase
/// hex digits.
pub fn new_campaign_secret() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// The campaign number `no` as its 5-character id (`campaign_id`), e.g. 1 → `00001`, 1,000 →
/// `000Z8`.
pub fn campaign_id(no: u64) -> String {
    let mut out = [b'0'; CAMPAIGN_CHARS];
    let mut n = no;
    for c in out.iter_mut().rev() {
        *c = ALPHABET[(n % 32) as usize];
        n /= 32;
    }
    String::from_utf8(out.to_vec()).expect("ASCII")
}

/// The campaign number of a `campaign_id` (5 characters of [`ALPHABET`], upper case), or of a
/// public id ([`public_id`]: those 5 and a tag, which this does not check); `None` for anything
/// else.
pub fn campaign_no(id: &str) -> Option<u64> {
    parse_public_id(id).map(|(no, _)| no)
}

/// The number of exactly 5 characters of [`ALPHABET`].
fn number_of(id: &str) -> Option<u64> {
    if id.len() != CAMPAIGN_CHARS {
        return None;
    }
    id.bytes().try_fold(0u64, |n, b| {
        let v = ALPHABET.iter().position(|&a| a == b)?;
        Some(n * 32 + v as u64)
    })
}

/// Characters of a campaign's id tag: 80 bits.
pub const TAG_CHARS: usize = 16;

/// A campaign's id tag: the first 80 bits of HMAC-SHA-256 under the campaign's secret (its 32
/// hex digits' text, as [`CodeKey`] keys it) of `hongbao-campaign-id-v1`, as [`TAG_CHARS`] characters of
/// [`ALPHABET`]. It follows the campaign number in the campaign's public id ([`public_id`]), so
/// that the id of a campaign not announced yet cannot be guessed from the ids before it: the
/// number counts up, the tag does not, and the secret never leaves Redis and the functions.
/// Derived, not drawn, so every retry of a creation (which reuses the stored secret) gives the
/// same id.
///
/// # Errors
/// [`BadRecord`] when `secret` is not 32 hex digits.
pub fn id_tag(secret: &str) -> Result<String, BadRecord> {
    if secret.len() != 32 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(BadRecord("a campaign secret is 32 hex digits".into()));
    }
    // Keyed by the secret's text, as `CodeKey` is.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(b"hongbao-campaign-id-v1");
    let digest = mac.finalize().into_bytes();
    let bits = digest[..10]
        .iter()
        .fold(0u128, |n, &b| (n << 8) | u128::from(b));
    Ok((0..TAG_CHARS)
        .rev()
        .map(|i| ALPHABET[((bits >> (5 * i)) & 31) as usize] as char)
        .collect())
}

/// A campaign's public id: its number's 5 characters ([`campaign_id`]) and, for a campaign
/// created with one, its [`id_tag`] (21 characters in all). A campaign created before tags
/// keeps its 5-character id.
pub fn public_id(no: u64, tag: Option<&str>) -> String {
    let mut id = campaign_id(no);
    if let Some(t) = tag {
        id.push_str(t);
    }
    id
}

/// The campaign number and tag of a public id ([`public_id`]): 5 characters of [`ALPHABET`]
/// (no tag) or 21 (the number, then the tag); `None` for anything else.
pub fn parse_public_id(id: &str) -> Option<(u64, Option<&str>)> {
    let (number, tag) = id.split_at_checked(CAMPAIGN_CHARS)?;
    let no = number_of(number)?;
    match tag.len() {
        0 => Some((no, None)),
        TAG_CHARS if tag.bytes().all(|b| ALPHABET.contains(&b)) => Some((no, Some(tag))),
        _ => None,
    }
}

/// The keyed permutation of one campaign's 60-bit index space.
#[derive(Clone)]
pub struct CodeKey {
    keyed: Hmac<Sha256>,
}

impl std::fmt::Debug for CodeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CodeKey(..)")
    }
}

impl CodeKey {
    /// The permutation keyed by `secret` (32 hex digits, as [`new_campaign_secret`] makes).
    ///
    /// # Errors
    /// [`BadRecord`] when `secret` is not 32 hex digits.
    pub fn new(secret: &str) -> Result<Self, BadRecord> {
        if secret.len() != 32 || !secret.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BadRecord("a campaign secret is 32 hex digits".into()));
        }
        let keyed = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
        Ok(CodeKey { keyed })
    }

    /// `F_r(half)`: the first 4 bytes of HMAC-SHA-256(secret, `[r]` || `half` as u32
    /// big-endian), as a big-endian integer, cut to 30 bits.
    fn round(&self, r: u8, half: u64) -> u64 {
        let mut mac = self.keyed.clone();
        mac.update(&[r]);
        mac.update(&(half as u32).to_be_bytes());
        let d = mac.finalize().into_bytes();
        u64::from(u32::from_be_bytes([d[0], d[1], d[2], d[3]])) & HALF_MASK
    }

    /// `E_k(index)`: round `r` maps `(L, R)` to `(R, L xor F_r(R))`. `index` below 2^60.
    pub fn permute(&self, index: u64) -> u64 {
        let (mut l, mut r) = (index >> 30 & HALF_MASK, index & HALF_MASK);
        for round in 0..ROUNDS {
            (l, r) = (r, l ^ self.round(round, r));
        }
        l << 30 | r
    }

    /// `E_k^-1(value)`, the inverse of [`CodeKey::permute`]. `value` below 2^60.
    pub fn unpermute(&self, value: u64) -> u64 {
        let (mut l, mut r) = (value >> 30 & HALF_MASK, value & HALF_MASK);
        for round in (0..ROUNDS).rev() {
            (l, r) = (r ^ self.round(round, l), l);
        }
        l << 30 | r
    }

    /// The code of index `index` (below 2^60) of campaign `no` (at most [`MAX_CAMPAIGN_NO`]).
    pub fn code(&self, no: u64, index: u64) -> String {
        let mut out = Vec::with_capacity(CODE_CHARS);
        out.extend_from_slice(campaign_id(no).as_bytes());
        let value = self.permute(index);
        for i in (0..VALUE_CHARS).rev() {
            out.push(ALPHABET[(value >> (5 * i) & 31) as usize]);
        }
        out.push(check_char(&out));
        String::from_utf8(out).expect("ASCII")
    }
}

/// A code that has the shape of a generated code, its check character verified: the campaign
/// and the permuted index, still to be inverted with the campaign's [`CodeKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedCode {
    /// The campaign number (characters 1-5).
    pub campaign_no: u64,
    /// `E_k(index)` (characters 6-17).
    pub value: u64,
}

/// Reads `code` as a generated code: upper-cases it, drops `-` and spaces, reads `I`/`L` as
/// `1` and `O` as `0`, and checks the length and the check character. `None` when it is not
/// one (an uploaded code, a typo).
pub fn parse(code: &str) -> Option<ParsedCode> {
    let mut digits = Vec::with_capacity(CODE_CHARS);
    for b in code.bytes() {
        let b = match b.to_ascii_uppercase() {
            b'-' | b' ' => continue,
            b'I' | b'L' => b'1',
            b'O' => b'0',
            b => b,
        };
        if !ALPHABET.contains(&b) || digits.len() == CODE_CHARS {
            return None;
        }
        digits.push(b);
    }
    if digits.len() != CODE_CHARS || check_char(&digits[..CODE_CHARS - 1]) != digits[CODE_CHARS - 1]
    {
        return None;
    }
    let value_of = |s: &[u8]| {
        s.iter().fold(0u64, |n, b| {
            n * 32 + ALPHABET.iter().position(|a| a == b).expect("checked") as u64
        })
    };
    Some(ParsedCode {
        campaign_no: value_of(&digits[..CAMPAIGN_CHARS]),
        value: value_of(&digits[CAMPAIGN_CHARS..CODE_CHARS - 1]),
    })
}

/// The Luhn mod N check character (N = 32) of `digits` (characters of [`ALPHABET`]): from the
/// right, every other value doubled and its base-32 digits added, then the character that
/// brings the sum to a multiple of 32.
fn check_char(digits: &[u8]) -> u8 {
    let mut sum = 0u32;
    for (i, b) in digits.iter().rev().enumerate() {
        let v = ALPHABET.iter().position(|a| a == b).expect("alphabet") as u32;
        let addend = if i % 2 == 0 { 2 * v } else { v };
        sum += addend / 32 + addend % 32;
    }
    ALPHABET[((32 - sum % 32) % 32) as usize]
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    const SECRET: &str = "00112233445566778899aabbccddeeff";

    #[test]
    fn a_tagged_id_names_its_campaign_and_its_tag() {
        let tag = id_tag("0f1e2d3c4b5a69788796a5b4c3d2e1f0").unwrap();
        let id = public_id(1_000, Some(&tag));

        assert_eq!((id.len(), &id[..5]), (21, "000Z8"));
        assert_eq!(parse_public_id(&id), Some((1_000, Some(tag.as_str()))));
        assert_eq!(parse_public_id("000Z8"), Some((1_000, None)));
        assert_ne!(tag, id_tag("0f1e2d3c4b5a69788796a5b4c3d2e1f1").unwrap());
        for bad in [
            "000Z",
            "000Z8ABC",
            "000z8",
            &format!("{id}0"),
            "000Z8IIIIIIIIIIIIIIII",
        ] {
            assert_eq!(parse_public_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn campaign_ids_round_trip() {
        assert_eq!(campaign_id(1), "00001");
        assert_eq!(campaign_id(1_000), "000Z8");
        assert_eq!(campaign_id(MAX_CAMPAIGN_NO), "ZZZZZ");
        for no in [0, 1, 31, 32, 1_000, 123_456, MAX_CAMPAIGN_NO] {
            assert_eq!(campaign_no(&campaign_id(no)), Some(no));
        }
        for bad in ["0001", "000001", "0000I", "0000u", "abcde"] {
            assert_eq!(campaign_no(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_permutation_inverts_and_never_repeats() {
        let key = CodeKey::new(SECRET).unwrap();
        let mut seen = HashSet::new();
        for i in (0..20_000).chain([(1 << 60) - 1, 1 << 59]) {
            let v = key.permute(i);
            assert!(v < 1 << 60);
            assert_eq!(key.unpermute(v), i);
            assert!(seen.insert(v), "{i}");
        }
        // Another secret, another order.
        let other = CodeKey::new(&SECRET.replace('0', "1")).unwrap();
        let agree = (0..1_000)
            .filter(|&i| key.permute(i) == other.permute(i))
            .count();
        assert_eq!(agree, 0);
        assert!(CodeKey::new("abc").is_err());
        assert!(CodeKey::new(&"g".repeat(32)).is_err());
    }

    #[test]
    fn codes_parse_back_and_typos_fail() {
        let key = CodeKey::new(SECRET).unwrap();
        for i in [0, 1, 2, 9_999_999] {
            let code = key.code(77, i);
            assert_eq!(code.len(), CODE_CHARS);
            assert!(code.starts_with("0002D"), "{code}");
            let p = parse(&code).unwrap();
            assert_eq!(p.campaign_no, 77);
            assert_eq!(key.unpermute(p.value), i);
            // Lower case, groups and Crockford's look-alikes read the same.
            let spaced = format!("{}-{} {}", &code[..5], &code[5..11], &code[11..]);
            assert_eq!(parse(&spaced.to_lowercase()), Some(p));
            // Every single substitution fails the check character.
            for pos in 0..CODE_CHARS {
                for &c in ALPHABET {
                    let mut typo = code.clone().into_bytes();
                    if typo[pos] == c {
                        continue;
                    }
                    typo[pos] = c;
                    assert_eq!(parse(std::str::from_utf8(&typo).unwrap()), None);
                }
            }
        }
        let code = key.code(77, 5);
        let o = code.replacen('0', "O", 1);
        assert_eq!(parse(&o), parse(&code));
        for bad in [
            "",
            "SAVE20",
            &code[..17],
            &format!("{code}0"),
            &code.replacen('0', "U", 1),
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn neighbouring_indices_give_unrelated_codes() {
        // Adjacent indices: the permuted values differ in about half of their 60 bits.
        let key = CodeKey::new(SECRET).unwrap();
        let n = 10_000u64;
        let bits: u64 = (0..n)
            .map(|i| u64::from((key.permute(i) ^ key.permute(i + 1)).count_ones()))
            .sum();
        let mean = bits as f64 / n as f64;
        assert!((mean - 30.0).abs() < 0.5, "{mean}");
    }
}
