//! The red-packet lifecycle: a packet paid from the sender's wallet, split into shares, grabbed
//! (one share per user), claimed into the grabber's wallet, and settled by reclaim-cron.
//!
//! | route | function | folder | store step | scripts |
//! | --- | --- | --- | --- | --- |
//! | `POST /packets` | create-packet | `create/` | [`create()`] | `due_add.lua`, `create_packet.lua` |
//! | `POST /packets/{id}/cancel` | create-packet | `cancel/` | [`cancel()`] | `cancel.lua` |
//! | `GET /packets/{id}` | grab | `view/` | [`view()`], [`view_as`], [`summary`] | `packet_view.lua` |
//! | `GET /packets/{id}/grabs` | grab | `grabs/` | [`view_as`] | `packet_view.lua` |
//! | `POST /packets/{id}/grab` | grab | `grab/` | [`grab()`], [`grab_with_password`] | `grab.lua` (or one `HGET`, `gone.rs`); a draw packet's entry `draw_enter.lua` |
//! | `POST /packets/{id}/claim` | claim | `claim/` | [`claim()`] (step 1), [`redrive_claim`] (steps 2 to 4, `redrive.rs`) | `claim.lua`, `wallet_credit.lua`, `claim_done.lua`, `transfer_release.lua` |
//! | `GET /packets`, `GET /packets/summary` | grab | [`crate::history`] | | |
//!
//! Each folder holds the operation's handler (`http.rs`), its store step (`store.rs`, each
//! script's call with the parsing of its reply) and its scripts; [`http`] the packet body the
//! answers share, [`draw`] a draw packet's draw (`draw_run.lua`), [`gone`] the sandbox's memory
//! of sold-out and expired packets, [`rules`] the pure rules (limits, fingerprints, passwords,
//! the fairness receipt). Each script touches one hash slot; see [`crate::store::keys`] for
//! the key layout.

pub mod cancel;
pub mod claim;
pub mod create;
pub mod draw;
pub mod gone;
pub mod grab;
pub mod grabs;
pub mod http;
pub mod rules;
pub mod view;

pub use cancel::store::cancel;
pub use claim::redrive::{claim_credit, redrive_claim, ClaimedPacket};
pub use claim::store::claim;
pub use create::store::create;
pub use grab::store::{grab, grab_with_password};
pub use rules::{
    best_luck, CancelOutcome, ClaimOutcome, CreateOutcome, Grab, GrabOutcome, NewPacket, Packet,
    PacketView, Reveal, Share, Status,
};
pub use view::store::{summaries, summary, view, view_as, ViewAs};

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the create-packet function, the sender's: `POST /packets`,
/// `POST /packets/{id}/cancel`.
pub fn create_routes() -> Routes {
    Routes::new()
        .route(&create::http::OPERATION, routes!(create::http::create))
        .route(&cancel::http::OPERATION, routes!(cancel::http::cancel))
}

/// The routes of the grab function: `GET /packets/{id}`, `GET /packets/{id}/grabs`,
/// `POST /packets/{id}/grab`, and the caller's history, `GET /packets` and
/// `GET /packets/summary` ([`crate::history`]).
pub fn grab_routes() -> Routes {
    Routes::new()
        .route(&view::http::OPERATION, routes!(view::http::view))
        .route(&grabs::http::OPERATION, routes!(grabs::http::grabs))
        .route(&grab::http::OPERATION, routes!(grab::http::grab))
        .merge(crate::history::routes())
}

/// The routes of the claim function: `POST /packets/{id}/claim`.
pub fn claim_routes() -> Routes {
    Routes::new().route(&claim::http::OPERATION, routes!(claim::http::claim))
}
