//! Coupon drops on Redis: a campaign's codes in pools on their own hash tags ([`keys`]), each
//! step an atomic script on one pool (`coupon_create_pool.lua`, `coupon_grab.lua`,
//! `coupon_take.lua`, `coupon_resolve.lua`, `coupon_hold.lua`,
//! `coupon_redeem.lua`, `coupon_release.lua`, `coupon_batch.lua`,
//! `coupon_add_codes.lua`, `coupon_close.lua`); a campaign is recorded under its
//! merchant reference on the tag `{coupon}` (`coupon_create.lua`), and uploaded codes are
//! claimed in a directory (`coupon_directory_add.lua`, `coupon_directory_remove.lua`).
//!
//! | route | auth | folder |
//! | --- | --- | --- |
//! | `POST /campaigns` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`create`](mod@create) |
//! | `GET /campaigns?merchant_id=` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`list_campaigns`](mod@list_campaigns) |
//! | `POST /campaigns/{id}/codes` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`add_codes`](mod@add_codes) |
//! | `GET /campaigns/{id}` | JWT | [`campaign`](mod@campaign) |
//! | `GET /campaigns/{id}/coupons` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`issued`](mod@issued) (its store step in `mod.rs`) |
//! | `POST /campaigns/{id}/grab` | JWT | [`grab`](mod@grab) (then `take.rs` and `resolve.rs` for an empty home pool) |
//! | `GET /coupons` | JWT | [`list`](mod@list) |
//! | `POST /coupons/hold` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`hold`](mod@hold) |
//! | `POST /coupons/redeem` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`redeem`](mod@redeem) |
//! | `POST /coupons/release` | AWS_IAM, `HONGBAO_COUPON_PRINCIPALS` | [`release`](mod@release) |
//!
//! Each folder holds the operation's handler (`http.rs`), its store step (`store.rs`, its
//! scripts' calls and the parsing of their replies) and its scripts. Shared by several: [`http`]
//! (who may call, the bodies), [`store`] (a grab's steps), [`keys`], [`facts`] (a campaign's
//! pools), [`locate`] (a code's pool, for the checkout), [`directory`], [`owner`], [`draw`]
//! (`coupon_draw_enter.lua`, `coupon_draw_run.lua`), [`close`] (`coupon_close.lua`) and
//! [`feed`] (ledger-export's list entries).
//!
//! Every protocol over several hash slots (a grab's reservation over the pools, a batch over
//! its pools, the directory claims of a creation or a batch) records each step's one outcome
//! where the next step and every re-run read it, first writer wins, so a re-run answers what
//! the first run answered.
//! The rules the scripts keep are in [`rules`].

pub mod add_codes;
pub mod campaign;
pub mod close;
pub mod create;
pub mod directory;
pub mod draw;
pub mod facts;
pub mod feed;
pub mod grab;
pub mod hold;
pub mod http;
pub mod issued;
pub mod keys;
pub mod list;
pub mod list_campaigns;
pub mod locate;
pub mod owner;
pub mod redeem;
pub mod release;
pub mod rules;
pub mod store;

pub use add_codes::store::{add_codes, AddCodesOutcome};
pub use campaign::store::{campaign, CampaignView, MyCoupon};
pub use create::store::{create, CampaignCreateOutcome, Created};
pub use grab::store::{grab, OPENING_RETRY_MS};
pub use hold::store::{hold, hold_as, HoldOutcome};
pub use keys::{pool_tag, PoolKeys};
pub use list::store::{page, CouponPage, ListedCoupon};
pub use list_campaigns::store::{list_campaigns, CampaignPage};
pub use redeem::store::{redeem, redeem_as, RedeemOutcome};
pub use release::store::{release, release_as, ReleaseOutcome, Released};
pub use store::CouponGrabOutcome;

use crate::api::operation::Routes;
use utoipa_axum::routes;

/// The routes of the coupon function.
pub fn routes() -> Routes {
    Routes::new()
        .route(&create::http::OPERATION, routes!(create::http::create))
        .route(
            &list_campaigns::http::OPERATION,
            routes!(list_campaigns::http::list_campaigns),
        )
        .route(
            &add_codes::http::OPERATION,
            routes!(add_codes::http::add_codes),
        )
        .route(
            &campaign::http::OPERATION,
            routes!(campaign::http::campaign),
        )
        .route(&issued::http::OPERATION, routes!(issued::http::list_issued))
        .route(&grab::http::OPERATION, routes!(grab::http::grab))
        .route(&list::http::OPERATION, routes!(list::http::list))
        .route(&hold::http::OPERATION, routes!(hold::http::hold))
        .route(&redeem::http::OPERATION, routes!(redeem::http::redeem))
        .route(&release::http::OPERATION, routes!(release::http::release))
}
