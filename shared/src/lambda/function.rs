//! [`Function`]: hongbao's Lambda functions by name, and the features each reads at Init.

use crate::store::Feature;

/// One of hongbao's Lambda functions: its name (`functions/<name>`, and the `Binary` of its
/// resource in `template.yaml`) and the features whose settings it reads at Init.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `create-packet`: POST /packets.
    CreatePacket,
    /// `grab`: GET /packets/{id}, POST /packets/{id}/grab, the history routes.
    Grab,
    /// `claim`: POST /packets/{id}/claim.
    Claim,
    /// `wallet`: GET /wallet, POST /wallet/deposits, POST /wallet/withdrawals.
    Wallet,
    /// `reclaim-cron`: the EventBridge schedule's refunds.
    ReclaimCron,
    /// `next-order-code`: POST /order-codes.
    NextOrderCode,
    /// `vote`: the article-voting routes.
    Vote,
    /// `ledger-export`: the EventBridge schedule's export of the money journal.
    LedgerExport,
    /// `coupon`: the coupon-drop routes (campaigns, grabs, coupons, redeem).
    Coupon,
}

impl Function {
    /// Every function, in `template.yaml`'s order.
    pub const ALL: [Function; 9] = [
        Function::CreatePacket,
        Function::Grab,
        Function::Claim,
        Function::Wallet,
        Function::ReclaimCron,
        Function::NextOrderCode,
        Function::Vote,
        Function::LedgerExport,
        Function::Coupon,
    ];

    /// The binary's name (`create-packet`, `grab`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Function::CreatePacket => "create-packet",
            Function::Grab => "grab",
            Function::Claim => "claim",
            Function::Wallet => "wallet",
            Function::ReclaimCron => "reclaim-cron",
            Function::NextOrderCode => "next-order-code",
            Function::Vote => "vote",
            Function::LedgerExport => "ledger-export",
            Function::Coupon => "coupon",
        }
    }

    /// The function named `name`, if any.
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The features whose settings the function reads ([`crate::store::Config::load`]); the
    /// others keep their defaults, so a setting the function does not use never stops it.
    pub fn features(self) -> &'static [Feature] {
        match self {
            Function::CreatePacket | Function::Grab | Function::Claim => &[Feature::Packets],
            Function::Wallet => &[Feature::Wallet],
            Function::ReclaimCron => &[Feature::Packets, Feature::Reclaim],
            Function::NextOrderCode => &[Feature::OrderCodes],
            Function::Vote => &[Feature::Voting],
            Function::LedgerExport => &[Feature::LedgerExport],
            Function::Coupon => &[Feature::Coupons],
        }
    }
}
