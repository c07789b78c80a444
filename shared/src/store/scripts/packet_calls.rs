//! The calls of the red-packet, wallet, history and lock scripts (see [`super::Call`]).
//!
//! Key fields take the names of [`crate::store::keys::PacketKeys`] and
//! [`crate::store::keys::WalletKeys`] where they are those keys.

use super::{
    CANCEL, CLAIM, CLAIM_DONE, CREATE_PACKET, DUE_ADD, GRAB, HISTORY_PAGE, JOURNAL_ACK,
    PACKET_VIEW, SETTLE, TRANSFER_RELEASE, UNLOCK, WALLET_CREDIT, WITHDRAW,
};

script_call! {
    /// `lua/create_packet.lua`: debit the sender and create the packet, atomically. Every key
    /// is on the sender's hash tag.
    pub struct CreatePacketCall<'a> for CREATE_PACKET {
        KEYS {
            /// The sender's wallet hash (field `balance`, cents).
            wallet: &'a str,
            /// The sender's ledger list.
            ledger: &'a str,
            /// The sender's idempotency records hash.
            records: &'a str,
            /// The sender's idempotency "forget after" sorted set (Unix ms).
            records_forget: &'a str,
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's share list (un-grabbed amounts, cents).
            shares: &'a str,
            /// The `Idempotency-Key`'s record in the layout before 0.2 (read only).
            legacy_record: &'a str,
            /// The sender's creates counter of the open quota window.
            creates: &'a str,
            /// The packet's recipients set (a targeted packet only).
            recipients: &'a str,
            /// The sender's sent history.
            sent: &'a str,
            /// The sender's received history (pruned here too).
            received: &'a str,
            /// The sender's history totals hash.
            history_totals: &'a str,
            /// The money journal of the sender's tag (one `packet_debit` entry).
            journal: &'a str,
        }
        ARGV {
            /// The new packet's id.
            packet_id: &'a str,
            /// The sender's user id.
            sender_id: &'a str,
            /// The packet's total, cents.
            total_cents: i64,
            /// The number of shares.
            count: u32,
            /// `lucky` or `fixed`.
            mode: &'a str,
            /// `double_mean` or `line_cut` for a lucky packet, empty for a fixed one.
            split: &'a str,
            /// The greeting, empty for none.
            greeting: &'a str,
            /// The packet expires this many seconds after its opening.
            expires_in_secs: u64,
            /// The request fingerprint: `v2:<sha256 hex>`, then a space and the v1 fingerprint
            /// when that one is unambiguous.
            fingerprint: &'a str,
            /// `create:<Idempotency-Key>`, empty for a request without the header.
            record_id: &'a str,
            /// How long the idempotency record is kept, ms (> 0).
            record_keep_ms: u64,
            /// Ledger length cap, entries.
            ledger_cap: u32,
            /// Packets a sender may create per window (0: no limit).
            packets_per_window: u32,
            /// The quota window, ms.
            window_ms: u64,
            /// A targeted packet's recipients joined by `\n`, empty for anyone.
            recipient_ids: &'a str,
            /// History retention, ms.
            history_retention_ms: u64,
            /// Business-year bounds (`YearBounds::arg`: `<first_year>:<s1>:<s2>:<s3>:<s4>`,
            /// Unix ms).
            year_bounds: &'a str,
            /// Redis `TIME` of the reclaim index's node when [`DueAddCall`] indexed the
            /// packet, Unix ms: the start of the call's delivery window.
            indexed_at_ms: i64,
            /// The delivery window, ms: past it the call creates nothing
            /// (`domain::packets::CREATE_WINDOW_MS`).
            delivery_window_ms: i64,
            /// Grabs open this many seconds after Redis `TIME` (0: at once).
            opens_in_secs: u64,
            /// The cover id, empty for none.
            cover: &'a str,
            /// The fairness receipt's salt, 64 hex digits (secret while the packet is open).
            salt: &'a str,
            /// The commitment to `share_amounts` under `salt`
            /// (`domain::packets::receipt::commitment`).
            commitment: &'a str,
            /// A password packet's verifier (`domain::packets::password`), empty for none.
            password: &'a str,
            /// The share amounts, cents: `count` of them, in share-id order.
            share_amounts: &'a [i64],
        }
    }
}

script_call! {
    /// `lua/due_add.lua`: add a packet to the reclaim index (before it is created).
    pub struct DueAddCall<'a> for DUE_ADD {
        KEYS {
            /// The reclaim index (`Keys::reclaim_due`).
            due: &'a str,
        }
        ARGV {
            /// The packet's id.
            packet_id: &'a str,
            /// The packet is due this many seconds after Redis `TIME`.
            expires_in_secs: u64,
        }
    }
}

script_call! {
    /// `lua/grab.lua`: at most one share per user, rate-limited.
    pub struct GrabCall<'a> for GRAB {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's share list.
            shares: &'a str,
            /// The packet's grabs hash (user -> share record).
            grabs: &'a str,
            /// The user's rate-limit counter on this packet (`Keys::grab_rate`).
            rate: &'a str,
            /// The packet's recipients set (read only for a targeted packet).
            recipients: &'a str,
        }
        ARGV {
            /// The grabbing user.
            user_id: &'a str,
            /// Attempts allowed per window (0 = unlimited).
            rate_limit: u32,
            /// The rate-limit window, ms.
            rate_window_ms: u64,
            /// The verifier of the password the grabber sent for this packet, empty for none.
            password: &'a str,
            /// This call's id, 8 hex digits drawn per call (a re-sent call carries the same),
            /// empty for none: a re-run of the winning call answers the win again.
            call_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/claim.lua`: claim step 1, reserve the share on the packet's slot.
    pub struct ClaimCall<'a> for CLAIM {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's grabs hash.
            grabs: &'a str,
            /// The packet's claims hash (user -> claim state).
            claims: &'a str,
        }
        ARGV {
            /// The claiming grabber.
            user_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/claim_done.lua`: claim step 3, mark the claim done.
    pub struct ClaimDoneCall<'a> for CLAIM_DONE {
        KEYS {
            /// The packet's claims hash.
            claims: &'a str,
        }
        ARGV {
            /// The claiming grabber.
            user_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/wallet_credit.lua`: credit a wallet once per transfer id. Every key is on the
    /// wallet owner's hash tag.
    pub struct WalletCreditCall<'a> for WALLET_CREDIT {
        KEYS {
            /// The wallet hash (field `balance`, cents).
            wallet: &'a str,
            /// The ledger list.
            ledger: &'a str,
            /// The idempotency records hash.
            records: &'a str,
            /// The idempotency "forget after" sorted set (Unix ms, `+inf` pinned).
            records_forget: &'a str,
            /// The transfer's record in the layout before 0.2 (read only).
            legacy_record: &'a str,
            /// The owner's received history.
            received: &'a str,
            /// The owner's sent history (pruned here).
            sent: &'a str,
            /// The owner's history totals hash.
            history_totals: &'a str,
            /// The money journal of the wallet's tag (one entry per credit applied).
            journal: &'a str,
        }
        ARGV {
            /// The credit, cents (> 0).
            amount_cents: i64,
            /// The ledger kind (`EntryKind::as_str`).
            kind: &'a str,
            /// The ledger reference.
            reference: &'a str,
            /// The transfer id (record id): `dep:<reference>` or `claim:<packet id>`.
            transfer_id: &'a str,
            /// What must match when the transfer id is seen again.
            fingerprint: &'a str,
            /// Keep the record this many ms; 0 pins it until `transfer_release.lua`.
            keep_ms: u64,
            /// Ledger length cap, entries.
            ledger_cap: u32,
            /// Refuse a credit that would take the balance over this many cents (0: only the
            /// exact-integer bound).
            balance_limit_cents: i64,
            /// A claim credit's received history member, empty for a deposit.
            history_entry: &'a str,
            /// History retention, ms.
            history_retention_ms: u64,
            /// The wallet's owner (the journal entry's user).
            user_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/settle.lua`: refund an expired packet to its sender, once. Every key is on the
    /// sender's hash tag.
    pub struct SettleCall<'a> for SETTLE {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's share list.
            shares: &'a str,
            /// The packet's grabs hash.
            grabs: &'a str,
            /// The packet's legacy grab order list (only expired).
            legacy_order: &'a str,
            /// The packet's claims hash.
            claims: &'a str,
            /// The sender's wallet hash.
            wallet: &'a str,
            /// The sender's ledger list.
            ledger: &'a str,
            /// The packet's recipients set.
            recipients: &'a str,
            /// The sender's sent history.
            sent: &'a str,
            /// The money journal of the sender's tag (`refund_credit`, `packet_settled`).
            journal: &'a str,
        }
        ARGV {
            /// The packet's id.
            packet_id: &'a str,
            /// How long the keys are kept after settlement, seconds.
            retention_secs: u64,
            /// Ledger length cap, entries.
            ledger_cap: u32,
        }
    }
}

script_call! {
    /// `lua/transfer_release.lua`: claim step 4, un-pin the claim's credit record.
    pub struct TransferReleaseCall<'a> for TRANSFER_RELEASE {
        KEYS {
            /// The grabber's wallet hash.
            wallet: &'a str,
            /// The grabber's idempotency "forget after" sorted set.
            records_forget: &'a str,
        }
        ARGV {
            /// The credit's record id, `claim:<packet id>`.
            record_id: &'a str,
            /// Forget the record this many ms from now (> 0).
            keep_ms: u64,
        }
    }
}

script_call! {
    /// `lua/withdraw.lua`: pay money out of a wallet once per reference. Every key is on the
    /// wallet owner's hash tag.
    pub struct WithdrawCall<'a> for WITHDRAW {
        KEYS {
            /// The wallet hash (field `balance`, cents).
            wallet: &'a str,
            /// The ledger list.
            ledger: &'a str,
            /// The idempotency records hash.
            records: &'a str,
            /// The idempotency "forget after" sorted set (Unix ms).
            records_forget: &'a str,
            /// The money journal of the wallet's tag (one `withdrawal` entry).
            journal: &'a str,
        }
        ARGV {
            /// The withdrawal, cents (> 0).
            amount_cents: i64,
            /// The caller's reference (the ledger entry's reference).
            reference: &'a str,
            /// The idempotency record id, `wd:<reference>`.
            record_id: &'a str,
            /// Keep the record this many ms (> 0).
            keep_ms: u64,
            /// Ledger entries kept.
            ledger_cap: u32,
            /// The wallet's owner (the journal entry's user).
            user_id: &'a str,
        }
    }
}

script_call! {
    /// `lua/journal_ack.lua`: delete exported entries of one journal.
    pub struct JournalAckCall<'a> for JOURNAL_ACK {
        KEYS {
            /// The journal stream.
            journal: &'a str,
        }
        ARGV {
            /// The stream ids of the exported entries.
            stream_ids: &'a [String],
        }
    }
}

script_call! {
    /// `lua/packet_view.lua`: a consistent snapshot of a packet.
    pub struct PacketViewCall<'a> for PACKET_VIEW {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The packet's grabs hash.
            grabs: &'a str,
            /// The packet's claims hash.
            claims: &'a str,
            /// The packet's recipients set.
            recipients: &'a str,
            /// The packet's share list (read once the packet is expired or settled).
            shares: &'a str,
        }
        ARGV {
            /// The viewer's user id, empty for none.
            viewer: &'a str,
        }
    }
}

script_call! {
    /// `lua/history_page.lua`: one page of a user's sent or received history.
    pub struct HistoryPageCall<'a> for HISTORY_PAGE {
        KEYS {
            /// The history list (`WalletKeys::history`).
            list: &'a str,
        }
        ARGV {
            /// `+` for the first page, else `(` and the cursor's `<ms>:<packet_id>`.
            upper: &'a str,
            /// Entries to return.
            limit: u32,
            /// History retention, ms.
            retention_ms: u64,
        }
    }
}

script_call! {
    /// `lua/unlock.lua`: compare-and-delete lock release.
    pub struct UnlockCall<'a> for UNLOCK {
        KEYS {
            /// The lock key.
            lock: &'a str,
        }
        ARGV {
            /// The owner's random token.
            token: &'a str,
        }
    }
}

script_call! {
    /// `lua/cancel.lua`: the sender cancels an open packet and gets its un-grabbed shares back,
    /// atomically. Every key is on the sender's hash tag.
    pub struct CancelCall<'a> for CANCEL {
        KEYS {
            /// The packet's meta hash.
            meta: &'a str,
            /// The sender's wallet hash.
            wallet: &'a str,
            /// The sender's ledger list.
            ledger: &'a str,
            /// The sender's sent history.
            sent: &'a str,
            /// The money journal of the sender's tag (`refund_credit`, `packet_cancelled`).
            journal: &'a str,
        }
        ARGV {
            /// The packet's id.
            packet_id: &'a str,
            /// The caller (only the sender may cancel).
            caller_id: &'a str,
            /// Ledger length cap, entries.
            ledger_cap: u32,
        }
    }
}
