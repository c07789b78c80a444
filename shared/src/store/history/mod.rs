//! A user's red-packet history: pages of the sent and received lists, newest first,
//! and the yearly totals.
//!
//! The entries are written by the scripts that move the money they record, on the user's own
//! hash slot: `lua/create_packet.lua` adds the sender's sent entry with the debit,
//! `lua/wallet_credit.lua` the grabber's received entry with a claim's credit (once per
//! transfer id, so re-drives add nothing), and `lua/settle.lua` writes the refund into the sent
//! entry. Each list is a sorted set read with `ZREVRANGEBYLEX` (see
//! [`crate::domain::history`] for the members); nothing in it has a TTL, and entries older than
//! `HONGBAO_HISTORY_RETENTION_DAYS` are pruned by those scripts (`lua/history.lua`).
//!
//! | file | operation | script |
//! | --- | --- | --- |
//! | `page.rs` | [`page`] | `history_page.lua` |
//! | `summary.rs` | [`summary`] | (one `HMGET`) |

mod page;
mod summary;

pub use crate::domain::history::{Cursor, Entry, Page, Role, Summary, Totals};
pub use page::page;
pub use summary::summary;
