//! Key names and hash tags.
//!
//! Every key is `<prefix>:{<tag>}:<rest>`. Redis Cluster hashes only the text between the
//! first `{` and the next `}` (the *hash tag*), so keys with the same tag share a hash slot
//! and one Lua script may touch them all.
//!
//! * A user's **wallet tag** is the first 4 hex digits of SHA-1 of the user id: 65,536 tags
//!   spread over the 16,384 slots, derived from the id but never the id itself, so
//!   user-controlled text never becomes a hash tag.
//! * A **packet** carries its sender's wallet tag: the packet id is that tag followed by 20
//!   random hex digits. Creating a packet (debit) and settling it (refund) therefore touch one
//!   slot and are single atomic scripts. Only a claim crosses slots (packet to grabber's
//!   wallet); it is made exactly-once with a transfer record (see `claim.lua`).
//! * The **reclaim index** and the **reclaim lock** use the fixed tag `{reclaim}`, the
//!   ledger-export lock `{export}`.
//! * The **money journal** is one stream per wallet tag, `hb:{t}:journal`: every script that
//!   moves money appends to the journal of the tag it runs on (`lua/journal.lua`), so 65,536
//!   journals exist at most, named without `SCAN` (`crate::store::journal`).
//! * A user id (any identity provider's `sub`: `auth0|…`, e-mail addresses, spaces, any
//!   script) appears in a key only as [`user_key_part`]: every byte outside `[A-Za-z0-9_-]`
//!   percent-encoded. Unescaped, the id `a:ledger` would name user `a`'s ledger as its wallet;
//!   encoded, `<user>` below never holds `:`, `{`, `}` or a space. (Hash fields such as the
//!   grabs' `user` hold the id as it is: a field is not parsed.)
//!
//! | key | type | contents |
//! | --- | --- | --- |
//! | `hb:{t}:wallet:<user>` | hash | `balance` (cents) |
//! | `hb:{t}:wallet:<user>:ledger` | list | `kind\|amount_cents\|at_ms\|reference`, newest first |
//! | `hb:{t}:wallet:<user>:idem` | hash | idempotency records, no TTL: `dep:<reference>` and `claim:<packet id>` -> fingerprint, `create:<Idempotency-Key>` -> `fingerprint\npacket_id` |
//! | `hb:{t}:wallet:<user>:creates` | string | packets the user created in the open quota window (`HONGBAO_PACKETS_PER_MINUTE`); TTL = the rest of the window |
//! | `hb:{t}:wallet:<user>:sent` | sorted set | the user's sent history: every score 0, members `<created_at ms, 13 digits>:<packet_id>:<year>\|...` (`crate::history::rules`), no TTL, pruned inside the scripts after `HONGBAO_HISTORY_RETENTION_DAYS` |
//! | `hb:{t}:wallet:<user>:received` | sorted set | the user's received (claimed) history, members `<claimed_at ms>:<packet_id>:<year>\|...`, as `sent` |
//! | `hb:{t}:wallet:<user>:history` | hash | history totals per business year: `<year>:<sent\|received>:<count\|cents>`, no TTL |
//! | `hb:{t}:wallet:<user>:idem:forget` | sorted set | record id -> when it may be forgotten (Unix ms; `+inf` while a claim still needs it), pruned inside the scripts |
//! | `hb:{t}:packet:<id>` | hash | packet meta and counters |
//! | `hb:{t}:packet:<id>:shares` | list | un-grabbed share amounts (cents) |
//! | `hb:{t}:packet:<id>:grabs` | hash | user -> `share_id:amount_cents:grabbed_at_ms` |
//! | `hb:{t}:packet:<id>:order` | list | the grabbers' user ids in share-id order (element i: share i + 1): the packet view's pages (`packet_view.lua`); absent or short for a packet grabbed before this index existed |
//! | `hb:{t}:packet:<id>:recipients` | set | a targeted packet's recipients (user ids); expires with the packet |
//! | `hb:{t}:packet:<id>:claims` | hash | user -> `pending:<ms>`, `done:<ms>` or `done:<ms>:redriven` (completed by reclaim-cron) |
//! | `hb:{t}:packet:<id>:coupons` | hash | a merchant packet paid out as coupons: share id -> its coupon's record (`lua/coupon_record.lua`: `<user>\n<issued_at_ms>`, then held or redeemed), `<share id>\n<order>` -> a release's memory (`coupon_release.lua`); kept until `redeem_by` and the retention after it |
//! | `hb:{t}:packet:<id>:attempts:<user>` | string | the user's accepted grab attempts in their open rate-limit window; TTL = the rest of the window |
//! | `hb:{t}:packet:<id>:wrong_guesses` | string | a password packet's wrong guesses (every user's) in its open guess window (`HONGBAO_GUESS_BUDGET`); TTL = the rest of the window |
//! | `hb:{reclaim}:due` | sorted set | packet id -> due time (Unix ms) |
//! | `hb:{reclaim}:lock` | string | the running reclaim's random token |
//! | `hb:{t}:fence` | string | written before a `WAIT` (`REDIS_WAIT_REPLICAS`): one per hash tag |
//! | `hb:{reclaim}:retries` | hash | packet id -> failed settlement attempts (for the backoff) |
//! | `hb:{t}:journal` | stream | the money journal of tag `t`: one entry per movement (`lua/journal.lua`), no TTL, deleted once exported (`lua/journal_ack.lua`); the key itself once empty |
//! | `hb:{export}:lock` | string | the running ledger export's random token |

use rand::RngCore;

/// Length of a packet id: 4 hex digits of wallet tag and 20 random hex digits.
pub const PACKET_ID_LEN: usize = 24;

/// The bytes a user id keeps as they are in a key: `[A-Za-z0-9_-]`; every other byte is
/// percent-encoded.
const USER_ID_KEPT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'-');

/// `user_id` as it appears inside a key: each UTF-8 byte outside `[A-Za-z0-9_-]` as `%XX`
/// (upper-case hex, RFC 3986 percent-encoding; `percent-encoding` crate), the rest unchanged.
/// So no id can contain `{`, `}` (a hash tag), `:` (the key separator) or a space once in a
/// key, two ids never share an encoding (`%` itself is encoded), and the ids of the old rule
/// (`[A-Za-z0-9_-]{1,64}`) keep the keys they always had.
///
/// Example: `auth0|65f0` → `auth0%7C65f0`, `a:ledger` → `a%3Aledger`.
pub fn user_key_part(user_id: &str) -> std::borrow::Cow<'_, str> {
    percent_encoding::utf8_percent_encode(user_id, USER_ID_KEPT).into()
}

/// The wallet hash tag of `user_id`: the first 4 lowercase hex digits of its SHA-1.
pub fn user_tag(user_id: &str) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(user_id.as_bytes());
    format!("{:02x}{:02x}", digest[0], digest[1])
}

/// A new packet id for `sender_id`: the sender's tag plus 80 random bits from the thread CSPRNG (ChaCha, OS-seeded).
pub fn new_packet_id(sender_id: &str) -> String {
    let mut bytes = [0u8; 10];
    rand::rng().fill_bytes(&mut bytes);
    let mut id = user_tag(sender_id);
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

/// Whether `id` has the shape of a packet id (24 lowercase hex digits).
pub fn is_packet_id(id: &str) -> bool {
    id.len() == PACKET_ID_LEN && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Key names for one deployment (one key prefix).
#[derive(Debug, Clone)]
pub struct Keys {
    prefix: String,
}

/// The keys of one red packet, in the order the scripts expect them.
#[derive(Debug, Clone)]
pub struct PacketKeys {
    /// Meta hash.
    pub meta: String,
    /// Un-grabbed share amounts.
    pub shares: String,
    /// Grabs hash (user -> share record).
    pub grabs: String,
    /// Grab order list: the grabbers' user ids in share-id order (element `i` holds share
    /// `i + 1`), appended by every grab (`grab.lua`, `lua/draw_run.lua`,
    /// `merchant_create_packet.lua`) so that the packet view reads a page of grabs
    /// without reading them all (`packet_view.lua`).
    pub order: String,
    /// A targeted packet's recipients (set of user ids; absent for an untargeted packet).
    pub recipients: String,
    /// Claims hash (user -> claim state).
    pub claims: String,
    /// A coupon packet's coupons (hash: share id -> the coupon record of
    /// `lua/coupon_record.lua`; `<share id>\n<order>` -> a release's memory), as a coupon
    /// pool's issued codes.
    pub coupons: String,
    /// A draw packet's entrants (sorted set, score 0, member `<ticket>:<user_id>`: members
    /// sort by ticket; `lua/draw_run.lua`).
    pub tickets: String,
    /// A password packet's wrong guesses, every user's, in its open guess window (a counter
    /// whose TTL is the rest of the window, `HONGBAO_GUESS_WINDOW_MS`; `grab.lua`).
    pub wrong_guesses: String,
}

/// The keys of one wallet.
#[derive(Debug, Clone)]
pub struct WalletKeys {
    /// Balance hash.
    pub wallet: String,
    /// Ledger list.
    pub ledger: String,
    /// Idempotency records hash (record id -> fingerprint), without a TTL.
    pub records: String,
    /// Sorted set: record id -> Unix ms after which it may be forgotten (`+inf`: pinned).
    pub records_forget: String,
    /// Packets created in the open quota window (`HONGBAO_PACKETS_PER_MINUTE`; a counter
    /// whose TTL is the rest of the window).
    pub creates: String,
    /// Packets created in the open day window (`HONGBAO_PACKETS_PER_DAY`; a counter whose TTL
    /// is the rest of the window).
    pub creates_day: String,
    /// The sender's open packets: sorted set, packet id -> `expires_at` (Unix ms), entries
    /// past it pruned by the next create, removed by a cancel; expires with its latest entry
    /// (`HONGBAO_MAX_OPEN_PACKETS_PER_USER`).
    pub open_packets: String,
    /// Sent history (sorted set, lexicographic; no TTL).
    pub sent: String,
    /// Received history (sorted set, lexicographic; no TTL).
    pub received: String,
    /// History totals per business year (hash; no TTL).
    pub history_totals: String,
    /// The money journal of the wallet's tag (a stream shared by every wallet and packet of
    /// the tag; no TTL).
    pub journal: String,
}

/// The keys of one merchant account, all on the merchant's hash tag.
#[derive(Debug, Clone)]
pub struct MerchantKeys {
    /// The merchant's hash: its books (`merchants::rules::Books`), no TTL.
    pub merchant: String,
    /// Ledger list (`kind|amount_cents|at_ms|reference`, newest first).
    pub ledger: String,
    /// Idempotency records hash (record id -> fingerprint), without a TTL.
    pub records: String,
    /// Sorted set: record id -> Unix ms after which it may be forgotten.
    pub records_forget: String,
    /// The merchant's packets: sorted set, packet id -> `created_at` (Unix ms), kept as long
    /// as the longest-lived packet can exist (its expiry and retention).
    pub packets: String,
    /// The money journal of the merchant's tag (a stream shared with the wallets and packets
    /// of the tag; no TTL).
    pub journal: String,
}

impl WalletKeys {
    /// The history list of `role`.
    pub fn history(&self, role: crate::history::rules::Role) -> &str {
        match role {
            crate::history::rules::Role::Sent => &self.sent,
            crate::history::rules::Role::Received => &self.received,
        }
    }
}

impl Keys {
    /// Key names under `prefix` (e.g. `hb`).
    pub fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.to_string(),
        }
    }

    /// The keys of packet `packet_id` (which must satisfy [`is_packet_id`]).
    pub fn packet(&self, packet_id: &str) -> PacketKeys {
        let base = format!(
            "{}:{{{}}}:packet:{}",
            self.prefix,
            &packet_id[..4],
            packet_id
        );
        PacketKeys {
            shares: format!("{base}:shares"),
            grabs: format!("{base}:grabs"),
            order: format!("{base}:order"),
            claims: format!("{base}:claims"),
            coupons: format!("{base}:coupons"),
            tickets: format!("{base}:tickets"),
            recipients: format!("{base}:recipients"),
            wrong_guesses: format!("{base}:wrong_guesses"),
            meta: base,
        }
    }

    /// The grab rate-limit counter of `user_id` on packet `packet_id` (`lua/rate_limit.lua`:
    /// accepted attempts in the user's open window, TTL = the rest of the window). Named
    /// `attempts` so that the state of earlier limiters (`:rl:` sorted sets, `:gcra:` Unix µs
    /// strings, both expiring within a window) is never read as a counter.
    pub fn grab_rate(&self, packet_id: &str, user_id: &str) -> String {
        format!(
            "{}:{{{}}}:packet:{}:attempts:{}",
            self.prefix,
            &packet_id[..4],
            packet_id,
            user_key_part(user_id)
        )
    }

    /// The wrong password guesses of `user_id` on packet `packet_id` over the packet's life
    /// (`grab.lua`: a counter expiring at the packet's `expires_at`).
    pub fn guesses(&self, packet_id: &str, user_id: &str) -> String {
        format!(
            "{}:{{{}}}:packet:{}:guesses:{}",
            self.prefix,
            &packet_id[..4],
            packet_id,
            user_key_part(user_id)
        )
    }

    /// The wallet of `user_id` (the id encoded by [`user_key_part`]).
    pub fn wallet(&self, user_id: &str) -> WalletKeys {
        let wallet = format!(
            "{}:{{{}}}:wallet:{}",
            self.prefix,
            user_tag(user_id),
            user_key_part(user_id)
        );
        WalletKeys {
            ledger: format!("{wallet}:ledger"),
            records: format!("{wallet}:idem"),
            records_forget: format!("{wallet}:idem:forget"),
            creates: format!("{wallet}:creates"),
            creates_day: format!("{wallet}:creates:day"),
            open_packets: format!("{wallet}:open"),
            sent: format!("{wallet}:sent"),
            received: format!("{wallet}:received"),
            history_totals: format!("{wallet}:history"),
            journal: self.journal_of_tag(&user_tag(user_id)),
            wallet,
        }
    }

    /// The account of merchant `merchant_id` (`domain::is_merchant_id`), on the
    /// hash tag a user of the same id would have ([`user_tag`]; only the tag is shared) and
    /// named with the id encoded as a user id is ([`user_key_part`]: a `:` cannot make one
    /// merchant's key another's).
    pub fn merchant(&self, merchant_id: &str) -> MerchantKeys {
        let tag = user_tag(merchant_id);
        let merchant = format!(
            "{}:{{{tag}}}:merchant:{}",
            self.prefix,
            user_key_part(merchant_id)
        );
        MerchantKeys {
            ledger: format!("{merchant}:ledger"),
            records: format!("{merchant}:idem"),
            records_forget: format!("{merchant}:idem:forget"),
            packets: format!("{merchant}:packets"),
            journal: self.journal_of_tag(&tag),
            merchant,
        }
    }

    /// The reclaim index: packet id -> due time (Unix ms).
    pub fn reclaim_due(&self) -> String {
        format!("{}:{{reclaim}}:due", self.prefix)
    }

    /// The replication fence of `key`'s hash slot: `<prefix>:{<tag>}:fence`, written before a
    /// `WAIT` so that the `WAIT` also covers writes this connection only read (see
    /// [`super::Conn`]). `key` must carry a hash tag.
    pub(crate) fn fence_of(&self, key: &str) -> String {
        let tag = key
            .find('{')
            .and_then(|open| {
                key[open + 1..]
                    .find('}')
                    .map(|len| &key[open + 1..open + 1 + len])
            })
            .unwrap_or("");
        format!("{}:{{{tag}}}:fence", self.prefix)
    }

    /// Failed settlement attempts per packet id (reclaim backoff).
    pub(crate) fn reclaim_retries(&self) -> String {
        format!("{}:{{reclaim}}:retries", self.prefix)
    }

    /// The reclaim lock.
    pub(crate) fn reclaim_lock(&self) -> String {
        format!("{}:{{reclaim}}:lock", self.prefix)
    }

    /// A refused deposit's or withdrawal's answer, kept under its call id: `<holder>:call:<call>`,
    /// a string on the hash tag of `holder` (a wallet's or a merchant's hash key) with a TTL of
    /// `HONGBAO_IDEMPOTENCY_TTL_SECS` (`lua/records.lua`: refusal_add).
    pub fn call_answer(holder: &str, call: &str) -> String {
        format!("{holder}:call:{call}")
    }

    /// The money journal of hash tag `tag` (4 hex digits): `<prefix>:{<tag>}:journal`.
    pub fn journal_of_tag(&self, tag: &str) -> String {
        format!("{}:{{{tag}}}:journal", self.prefix)
    }

    /// The money journal of packet `packet_id`'s tag (its sender's wallet tag).
    pub fn packet_journal(&self, packet_id: &str) -> String {
        self.journal_of_tag(&packet_id[..4.min(packet_id.len())])
    }

    /// The lock that keeps ledger-export runs from overlapping.
    pub(crate) fn export_lock(&self) -> String {
        format!("{}:{{export}}:lock", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_encoded_in_keys() {
        assert_eq!(user_key_part("alice_01-x"), "alice_01-x");
        assert_eq!(user_key_part("auth0|65f0"), "auth0%7C65f0");
        assert_eq!(user_key_part("a:ledger"), "a%3Aledger");
        assert_eq!(user_key_part("{x} y%"), "%7Bx%7D%20y%25");
        assert_eq!(user_key_part("é"), "%C3%A9");
        let keys = Keys::new("hb");
        // Unescaped, this user's wallet would be user `a`'s ledger list.
        assert_ne!(keys.wallet("a:ledger").wallet, keys.wallet("a").ledger);
        let w = keys.wallet("evil}{x}:ledger");
        assert_eq!(w.wallet.matches(['{', '}']).count(), 2, "{}", w.wallet);
        assert_eq!(tag_of(&w.wallet), user_tag("evil}{x}:ledger"));
        // Distinct ids never share an encoding (spot check; `%` is itself encoded).
        assert_ne!(user_key_part("%41"), user_key_part("A"));
    }

    fn tag_of(key: &str) -> &str {
        let open = key.find('{').unwrap();
        let close = key[open..].find('}').unwrap() + open;
        &key[open + 1..close]
    }

    #[test]
    fn packet_shares_sender_wallet_tag() {
        let keys = Keys::new("hb");
        let id = new_packet_id("alice");
        assert!(is_packet_id(&id));
        let p = keys.packet(&id);
        let w = keys.wallet("alice");
        for k in [
            &p.meta,
            &p.shares,
            &p.grabs,
            &p.order,
            &p.claims,
            &w.wallet,
            &w.ledger,
            &w.records,
            &w.records_forget,
            &w.sent,
            &w.received,
            &w.history_totals,
            &p.recipients,
            &p.wrong_guesses,
        ] {
            assert_eq!(tag_of(k), user_tag("alice"), "{k}");
        }
        assert_eq!(tag_of(&keys.grab_rate(&id, "bob")), user_tag("alice"));
    }

    #[test]
    fn fences_share_the_hash_tag() {
        let keys = Keys::new("hb");
        let w = keys.wallet("alice").wallet;
        assert_eq!(
            keys.fence_of(&w),
            format!("hb:{{{}}}:fence", user_tag("alice"))
        );
        assert_eq!(keys.fence_of(&keys.reclaim_due()), "hb:{reclaim}:fence");
    }

    #[test]
    fn packet_ids() {
        assert_ne!(new_packet_id("a"), new_packet_id("a"));
        assert!(!is_packet_id("ABCDEF0123456789abcdef01"));
        assert!(!is_packet_id("abc"));
        assert_eq!(user_tag("alice").len(), 4);
    }
}
