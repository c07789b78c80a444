//! The secret permutation of one business day's positions to order-code suffixes: a keyed
//! Feistel network with cycle-walking, keyed by the day's secret ([`new_day_secret`]), so a
//! day's suffixes are distinct and their order is known only to whoever holds the secret.

use std::sync::{Arc, Mutex};

use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha1::Sha1;

use super::{domain, first_suffix, DIGITS};

/// Feistel rounds: 10, as in NIST SP 800-38G FF1.
pub const ROUNDS: usize = 10;

/// A new day secret: 128 bits from the thread CSPRNG (ChaCha, OS-seeded) as 32 lowercase hex
/// digits. Sent with every call; stored only by the first call of a day.
pub fn new_day_secret() -> String {
    format!("{:032x}", rand::rng().random::<u128>())
}

/// The secret permutation of one day's positions: a keyed balanced Feistel network over
/// `[0, a^2)`, `a = ceil(sqrt(domain))`, with cycle-walking into `[0, domain)`,
/// `domain = 9 * 10^(digits - 1)`.
///
/// Round `r` maps `(L, R)` to `(R, (L + F_r(R)) mod a)` with
/// `F_r(v) = HMAC-SHA-1(secret, [r] || v as u32 big-endian)`, its first 8 bytes as a big-endian
/// integer, mod `a` (bias below `a / 2^64`). Each round is a bijection of `[0, a)^2`, so the
/// network is one; cycle-walking (re-encrypting until the value falls below `domain`)
/// restricts a bijection of a superset to a bijection of `domain`. `F_r` is tabulated: `10 * a`
/// entries of `u32` (12 KB for 5 digits, 120 KB for 7). `Debug` shows neither the secret nor
/// the tables.
#[derive(Clone)]
pub struct Permutation {
    digits: u32,
    domain: u64,
    half: u64,
    secret: String,
    table: Vec<u32>,
}

impl std::fmt::Debug for Permutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permutation")
            .field("digits", &self.digits)
            .field("domain", &self.domain)
            .finish()
    }
}

impl Permutation {
    /// The permutation of `digits`-digit suffixes (5..=7) keyed by `secret` (any bytes; the
    /// day's 32 hex digits).
    ///
    /// # Panics
    /// When `digits` is outside [`DIGITS`] (the configuration refuses such values).
    pub fn new(digits: u32, secret: &str) -> Self {
        assert!(
            DIGITS.contains(&digits),
            "order-code digits must be 5..=7, got {digits}"
        );
        let domain = domain(digits);
        let mut half = (domain as f64).sqrt() as u64;
        while half * half < domain {
            half += 1;
        }
        // HMAC-SHA-1 (RFC 2104) with the key absorbed once; each message starts from a clone.
        let keyed = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
        let mut table = Vec::with_capacity(ROUNDS * half as usize);
        for round in 0..ROUNDS {
            for v in 0..half {
                let mut msg = [0u8; 5];
                msg[0] = round as u8;
                msg[1..].copy_from_slice(&(v as u32).to_be_bytes());
                let mac = keyed.clone().chain_update(msg).finalize().into_bytes();
                let word = u64::from_be_bytes(mac[..8].try_into().expect("8 bytes"));
                table.push((word % half) as u32);
            }
        }
        Permutation {
            digits,
            domain,
            half,
            secret: secret.to_string(),
            table,
        }
    }

    /// The number of positions (and suffixes) of a day: `9 * 10^(digits - 1)`.
    pub fn domain(&self) -> u64 {
        self.domain
    }

    /// The suffix width.
    pub fn digits(&self) -> u32 {
        self.digits
    }

    /// Where position `p` (`0..domain`) goes, in `0..domain`.
    ///
    /// # Panics
    /// When `p >= domain`.
    pub fn permute(&self, p: u64) -> u64 {
        assert!(
            p < self.domain,
            "position {p} is outside the day's {} positions",
            self.domain
        );
        let a = self.half;
        let mut x = p;
        loop {
            let (mut l, mut r) = (x / a, x % a);
            for round in 0..ROUNDS {
                let f = u64::from(self.table[round * a as usize + r as usize]);
                (l, r) = (r, (l + f) % a);
            }
            x = l * a + r;
            if x < self.domain {
                return x;
            }
        }
    }

    /// The suffix of position `p`: `10^(digits - 1) + permute(p)`, exactly `digits` digits,
    /// never starting with 0.
    pub fn suffix(&self, p: u64) -> u64 {
        first_suffix(self.digits) + self.permute(p)
    }
}

/// The permutations of the last few days seen by this sandbox (usually today's, plus
/// yesterday's around midnight), so the round tables are built once per day.
static PERMUTATIONS: Mutex<Vec<Arc<Permutation>>> = Mutex::new(Vec::new());

/// How many permutations [`permutation`] keeps.
const CACHED_PERMUTATIONS: usize = 4;

/// The permutation for `digits` and `secret`, from the sandbox's cache or built (and cached).
pub fn permutation(digits: u32, secret: &str) -> Arc<Permutation> {
    let find = |cache: &Vec<Arc<Permutation>>| {
        cache
            .iter()
            .find(|p| p.digits == digits && p.secret == secret)
            .cloned()
    };
    if let Some(p) = find(&PERMUTATIONS.lock().unwrap_or_else(|e| e.into_inner())) {
        return p;
    }
    let built = Arc::new(Permutation::new(digits, secret));
    let mut cache = PERMUTATIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = find(&cache) {
        return p;
    }
    if cache.len() >= CACHED_PERMUTATIONS {
        cache.remove(0);
    }
    cache.push(built.clone());
    built
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every position maps to a distinct suffix of the right width: a bijection of the day.
    fn assert_bijection(digits: u32) {
        let perm = Permutation::new(digits, "00112233445566778899aabbccddeeff");
        let n = perm.domain();
        let mut seen = vec![false; n as usize];
        for p in 0..n {
            let s = perm.suffix(p);
            assert_eq!(s.to_string().len(), digits as usize, "{p} -> {s}");
            let i = (s - first_suffix(digits)) as usize;
            assert!(!seen[i], "{digits} digits: suffix {s} twice");
            seen[i] = true;
        }
    }

    #[test]
    fn five_and_six_digit_permutations_are_bijections() {
        assert_bijection(5);
        assert_bijection(6); // a = 949, a^2 = 900,601: exercises cycle-walking
    }

    #[test]
    fn seven_digit_permutation_samples() {
        // The full 9,000,000-position check takes too long in debug builds; the construction is
        // the same as for 5 and 6 digits (a = 3,000, a^2 = 9,000,000 exactly: no walking).
        let perm = Permutation::new(7, "k");
        let suffixes: std::collections::HashSet<u64> =
            (0..20_000).map(|p| perm.suffix(p)).collect();
        assert_eq!(suffixes.len(), 20_000);
        assert!(suffixes.iter().all(|s| (1_000_000..=9_999_999).contains(s)));
    }

    #[test]
    fn secrets_give_different_orders() {
        let (a, b) = (
            Permutation::new(5, &new_day_secret()),
            Permutation::new(5, &new_day_secret()),
        );
        let same = (0..10_000)
            .filter(|&p| a.permute(p) == b.permute(p))
            .count();
        assert!(same < 10, "{same} of 10,000 positions agree");
        // The same secret gives the same order (every sandbox computes the same codes).
        let c = Permutation::new(5, &a.secret);
        assert!((0..1000).all(|p| a.permute(p) == c.permute(p)));
        assert!(Arc::ptr_eq(&permutation(5, "x"), &permutation(5, "x")));
    }

    #[test]
    fn hmac_sha1_matches_rfc_2202() {
        let mac = |key: &[u8], msg: &[u8]| -> String {
            let m = Hmac::<Sha1>::new_from_slice(key).unwrap().chain_update(msg);
            m.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        assert_eq!(
            mac(b"Jefe", b"what do ya want for nothing?"),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        assert_eq!(
            mac(
                &[0xaa; 80],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "aa4ae5e15272d00e95705637ce8a3b55ed402112"
        );
    }
}
