//! The red-packet lifecycle, one operation per file, named as the scripts (`lua/<op>.lua`) and
//! the handlers (`crate::api::packets`):
//!
//! | file | operation | scripts |
//! | --- | --- | --- |
//! | `create.rs` | [`create`] | `due_add.lua`, `create_packet.lua` |
//! | `view.rs` | [`view`], [`view_as`], [`summary`] | `packet_view.lua` |
//! | `grab.rs` | [`grab`], [`grab_with_password`] | `grab.lua` (or one `HGET`, `gone.rs`); a draw packet's entry `draw_enter.lua` |
//! | `draw.rs` | [`draw::run`] (a draw packet's draw) | `draw_run.lua` |
//! | `claim.rs` | [`claim`] (step 1) | `claim.lua` |
//! | `redrive.rs` | [`redrive_claim`] (steps 2 to 4) | `wallet_credit.lua`, `claim_done.lua`, `transfer_release.lua` |
//! | `cancel.rs` | [`cancel`] | `cancel.lua` |
//! | `gone.rs` | the sandbox's memory of sold-out and expired packets | |
//!
//! Every operation is one or more Lua scripts; each script touches one hash slot. See
//! [`super::keys`] for the key layout and `lua/*.lua` for the atomic steps. Each script's call
//! struct stands in the file of the operation that runs it, with the parsing of its reply.

mod cancel;
mod claim;
pub(crate) mod create;
pub mod draw;
pub(crate) mod gone;
mod grab;
mod redrive;
pub(crate) mod view;

pub use crate::domain::packets::{
    best_luck, CancelOutcome, ClaimOutcome, CreateOutcome, Grab, GrabOutcome, NewPacket, Packet,
    PacketView, Reveal, Share, Status,
};
pub use cancel::cancel;
pub use claim::claim;
pub use create::create;
pub use grab::{grab, grab_with_password};
pub use redrive::{claim_credit, redrive_claim, ClaimedPacket};
pub use view::{summaries, summary, view, view_as, ViewAs};
