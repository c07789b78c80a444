//! The fairness receipt of a red packet: a commitment to its shares, published at creation,
//! and the reveal that lets anyone check it once the packet is no longer open.
//!
//! At creation the shares are drawn (as always, before the first grab) together with a
//! 32-byte random salt, and the packet publishes
//! `commitment = hex(SHA-256("hongbao-shares-v1:<salt hex>:<c1>,<c2>,...,<cn>"))`, where `c1..cn`
//! are the share amounts in cents in share-id order (share 1 first), in decimal without
//! leading zeros. The salt stays secret while the packet is open (without it, a small packet's
//! few possible splits could be tried against the commitment); once the packet is sold out,
//! cancelled, expired or settled, its view reveals the salt and the shares. A grabber checks
//! that the hash matches, that the shares sum to the total, and that their own share id and
//! amount are in the list: the operator could not have changed a share after the commitment
//! was published, nor handed out more than the total.

use sha2::{Digest, Sha256};

/// The domain-separation prefix of the committed text (versioned: a later encoding gets a new
/// prefix, so no text of one version can pass for another).
pub const COMMITMENT_PREFIX: &str = "hongbao-shares-v1";

/// Bytes of the random salt.
pub const SALT_BYTES: usize = 32;

/// The text a commitment hashes: `hongbao-shares-v1:<salt hex>:<c1>,...,<cn>`.
pub fn committed_text(salt_hex: &str, shares_cents: &[i64]) -> String {
    let shares: Vec<String> = shares_cents.iter().map(i64::to_string).collect();
    format!("{COMMITMENT_PREFIX}:{salt_hex}:{}", shares.join(","))
}

/// The commitment to `shares_cents` (share-id order) under `salt_hex` (64 lowercase hex
/// digits): 64 lowercase hex digits of SHA-256 of [`committed_text`].
pub fn commitment(salt_hex: &str, shares_cents: &[i64]) -> String {
    hex(&Sha256::digest(
        committed_text(salt_hex, shares_cents).as_bytes(),
    ))
}

/// A fresh salt from `rng` (a CSPRNG in production: `rand::rng()`), as 64 lowercase hex
/// digits.
pub fn new_salt(rng: &mut impl rand::Rng) -> String {
    let mut salt = [0u8; SALT_BYTES];
    rng.fill(&mut salt[..]);
    hex(&salt)
}

/// Whether a reveal proves the commitment: the hash of the revealed text equals `commitment`
/// and the shares, each at least 1 cent, sum to `total_cents`. (A grabber also checks that
/// their own share is the list's entry at their share id.)
pub fn verify(
    commitment_hex: &str,
    salt_hex: &str,
    shares_cents: &[i64],
    total_cents: i64,
) -> bool {
    shares_cents.iter().all(|&c| c >= 1)
        && shares_cents.iter().sum::<i64>() == total_cents
        && commitment(salt_hex, shares_cents) == commitment_hex
}

/// Whether `s` is a salt or a commitment as stored: 64 lowercase hex digits.
pub fn is_digest_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `bytes` as lowercase hex digits, two per byte.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn the_documented_encoding() {
        let salt = "00".repeat(32);
        assert_eq!(
            committed_text(&salt, &[125, 1, 3874]),
            format!("hongbao-shares-v1:{salt}:125,1,3874")
        );
        // Known answer: python3 -c 'import hashlib; print(hashlib.sha256(
        //   b"hongbao-shares-v1:" + b"00" * 32 + b":125,1,3874").hexdigest())'
        assert_eq!(
            commitment(&salt, &[125, 1, 3874]),
            "7e5415b23ec3bcff32a1c231a326c6e65b5f940ac648375299e7ebec6971e2bd"
        );
        assert!(is_digest_hex(&commitment(&salt, &[1])));
    }

    #[test]
    fn any_change_breaks_the_proof() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..1_000 {
            let n = rng.random_range(1..=50usize);
            let shares: Vec<i64> = (0..n).map(|_| rng.random_range(1..=500)).collect();
            let total: i64 = shares.iter().sum();
            let salt = new_salt(&mut rng);
            let c = commitment(&salt, &shares);
            assert!(verify(&c, &salt, &shares, total));
            let mut moved = shares.clone();
            let i = rng.random_range(0..n);
            moved[i] += 1;
            assert!(!verify(&c, &salt, &moved, total + 1));
            assert!(!verify(&c, &salt, &shares, total + 1));
            let other_salt = new_salt(&mut rng);
            assert!(!verify(&c, &other_salt, &shares, total));
            if n > 1 && shares[0] != shares[n - 1] {
                let mut swapped = shares.clone();
                swapped.swap(0, n - 1);
                assert!(!verify(&c, &salt, &swapped, total));
            }
        }
    }
}
