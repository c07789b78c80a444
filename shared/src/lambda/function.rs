//! [`Function`]: hongbao's Lambda functions, each declared once here — its name, its template
//! resources' logical id, what triggers it, how it is built, the features whose settings it
//! reads, and (for an HTTP function) its routes.
//!
//! Everything that lists functions derives from [`Function::ALL`]: `functions.json` at the
//! repository's top level ([`declarations`]; a test fails while the committed file differs,
//! `make functions` rewrites it), which the Makefile, the template generator, `env.json` and
//! the Python tools read; the integration tests and `make serve` route through
//! [`Function::router`] and [`app`].

use axum::Router;
use serde::Serialize;

use crate::api::operation::{Operation, Routes};
use crate::api::{contract, ApiState};
use crate::store::acl::RedisUser;
use crate::store::Feature;

/// One of hongbao's Lambda functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    /// `create-packet`: a sender's routes (create, cancel).
    CreatePacket,
    /// `grab`: a packet's view and grab, a user's history.
    Grab,
    /// `claim`: a grabbed share into the wallet.
    Claim,
    /// `wallet`: the wallet, the backend's deposits and withdrawals, the support look-ups.
    Wallet,
    /// `reclaim-cron`: the EventBridge schedule's refunds and campaign closes.
    ReclaimCron,
    /// `next-order-code`: order codes.
    NextOrderCode,
    /// `vote`: article voting.
    Vote,
    /// `ledger-export`: the EventBridge schedule's export of the money journal.
    LedgerExport,
    /// `coupon`: coupon drops (campaigns, grabs, checkout).
    Coupon,
    /// `reconcile-cron`: the EventBridge schedule's check of every wallet against its ledger
    /// and the journal.
    ReconcileCron,
    /// `merchant`: merchant budgets and their orders' packets (the team's backend, AWS_IAM).
    Merchant,
}

/// What starts a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// API Gateway HTTP API events of its operations.
    Http,
    /// An EventBridge schedule (a tick); the template gives it the scheduled job's queues and
    /// alarms.
    Schedule,
}

/// A function's declaration: everything about it that another file would otherwise repeat.
#[derive(Debug, Clone, Copy)]
pub struct Declaration {
    /// The binary's name, `functions/<name>` (`create-packet`).
    pub name: &'static str,
    /// The stem of its template resources' logical ids (`CreatePacket`: `CreatePacketFunction`,
    /// `CreatePacketLogGroup`, ...); a logical id is what a deployed stack updates in place.
    pub logical_id: &'static str,
    /// What starts it.
    pub trigger: Trigger,
    /// The features whose settings it reads at Init ([`crate::store::Config::load`]); the
    /// others keep their defaults, so a setting it does not use never stops it.
    pub features: &'static [Feature],
    /// The Redis user it connects as ([`RedisUser`]: its key families and commands).
    pub redis_user: RedisUser,
}

impl Function {
    /// Every function, in the order the template and `functions.json` list them.
    pub const ALL: &'static [Function] = &[
        Function::CreatePacket,
        Function::Grab,
        Function::Claim,
        Function::Wallet,
        Function::ReclaimCron,
        Function::NextOrderCode,
        Function::Vote,
        Function::LedgerExport,
        Function::Coupon,
        Function::ReconcileCron,
        Function::Merchant,
    ];

    /// The function's declaration.
    pub const fn declaration(self) -> Declaration {
        const fn http(name: &'static str, id: &'static str, f: &'static [Feature]) -> Declaration {
            Declaration {
                name,
                logical_id: id,
                trigger: Trigger::Http,
                features: f,
                redis_user: RedisUser::App,
            }
        }
        match self {
            Function::CreatePacket => http("create-packet", "CreatePacket", &[Feature::Packets]),
            Function::Grab => http("grab", "Grab", &[Feature::Packets]),
            Function::Claim => http("claim", "Claim", &[Feature::Packets]),
            Function::Wallet => http("wallet", "Wallet", &[Feature::Wallet]),
            Function::ReclaimCron => Declaration {
                name: "reclaim-cron",
                logical_id: "ReclaimCron",
                trigger: Trigger::Schedule,
                features: &[Feature::Packets, Feature::Reclaim],
                redis_user: RedisUser::App,
            },
            Function::NextOrderCode => Declaration {
                redis_user: RedisUser::OrderCodes,
                ..http("next-order-code", "NextOrderCode", &[Feature::OrderCodes])
            },
            Function::Vote => Declaration {
                redis_user: RedisUser::Vote,
                ..http("vote", "Vote", &[Feature::Voting])
            },
            Function::LedgerExport => Declaration {
                name: "ledger-export",
                logical_id: "LedgerExport",
                trigger: Trigger::Schedule,
                features: &[Feature::LedgerExport],
                redis_user: RedisUser::LedgerExport,
            },
            Function::Coupon => http("coupon", "Coupon", &[Feature::Coupons]),
            Function::ReconcileCron => Declaration {
                name: "reconcile-cron",
                logical_id: "ReconcileCron",
                trigger: Trigger::Schedule,
                features: &[],
                redis_user: RedisUser::App,
            },
            // Its own function, not create-packet's: every route is the team's backend
            // (AWS_IAM, its own principals), so its concurrency, throttles and alarms are not
            // the app users'. It reads the wallet settings for HONGBAO_DEPOSIT_DEDUP_SECS and the
            // red packets' for its orders' packets (the limits, covers, retention and
            // idempotency TTL of `POST /packets`).
            Function::Merchant => http(
                "merchant",
                "Merchant",
                &[Feature::Merchants, Feature::Wallet, Feature::Packets],
            ),
        }
    }

    /// An HTTP function's routes (its handlers and the operations they serve); none for a
    /// scheduled function.
    pub fn routes(self) -> Option<Routes> {
        Some(match self {
            Function::CreatePacket => crate::packets::create_routes(),
            Function::Grab => crate::packets::grab_routes(),
            Function::Claim => crate::packets::claim_routes(),
            Function::Wallet => crate::wallet::routes().merge(crate::support::routes()),
            Function::NextOrderCode => crate::order_codes::routes(),
            Function::Vote => crate::voting::routes(),
            Function::Coupon => crate::coupons::routes(),
            Function::Merchant => crate::merchants::routes(),
            Function::ReclaimCron | Function::LedgerExport | Function::ReconcileCron => {
                return None
            }
        })
    }

    /// The binary's name (`create-packet`, `grab`, ...).
    pub fn name(self) -> &'static str {
        self.declaration().name
    }

    /// The function named `name`, if any.
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// The features whose settings the function reads ([`Declaration::features`]).
    pub fn features(self) -> &'static [Feature] {
        self.declaration().features
    }

    /// The operations an HTTP function serves (none for a scheduled one).
    pub fn operations(self) -> Vec<&'static Operation> {
        self.routes()
            .map(|r| r.operations().to_vec())
            .unwrap_or_default()
    }

    /// An HTTP function's router over `state`, with the contract's JSON answers for unknown
    /// routes ([`crate::api::contract`]): what its `main` serves. `None` for a scheduled function.
    pub fn router(self, state: ApiState) -> Option<Router> {
        self.routes()
            .map(|r| contract(r.into_router().with_state(state)))
    }
}

/// The whole HTTP API in one router: every HTTP function's routes, as the template routes
/// them (what `make serve` runs).
pub fn app(state: ApiState) -> Router {
    let routes = Function::ALL
        .iter()
        .filter_map(|f| f.routes())
        .fold(Routes::new(), Routes::merge);
    contract(routes.into_router().with_state(state))
}

/// `functions.json`: `{"functions": [{"name", "logical_id", "trigger", "features",
/// "redis_user", "operations": [{"event", "method", "path", "auth", "principals",
/// "tenant"}]}], "redis_users": [{"name", "scripts", "access"}]}`, every function of
/// [`Function::ALL`] and every user of [`RedisUser::ALL`] in order (`access` with the key
/// prefix written `${KeyPrefix}`, as the template's `!Sub` takes it), pretty-printed with a
/// final newline.
pub fn declarations() -> String {
    #[derive(Serialize)]
    struct Entry {
        name: &'static str,
        logical_id: &'static str,
        trigger: Trigger,
        features: Vec<&'static str>,
        redis_user: &'static str,
        operations: Vec<&'static Operation>,
    }
    let functions: Vec<Entry> = Function::ALL
        .iter()
        .map(|&f| {
            let d = f.declaration();
            Entry {
                name: d.name,
                logical_id: d.logical_id,
                trigger: d.trigger,
                features: d.features.iter().map(|x| x.name()).collect(),
                redis_user: d.redis_user.name(),
                operations: f.operations(),
            }
        })
        .collect();
    #[derive(Serialize)]
    struct User {
        name: &'static str,
        scripts: Vec<&'static str>,
        access: String,
    }
    let redis_users = RedisUser::ALL
        .iter()
        .map(|&u| User {
            name: u.name(),
            scripts: u.scripts(),
            access: u.access_string("${KeyPrefix}"),
        })
        .collect();
    #[derive(Serialize)]
    struct Doc {
        functions: Vec<Entry>,
        redis_users: Vec<User>,
    }
    let doc = Doc {
        functions,
        redis_users,
    };
    let mut out = serde_json::to_string_pretty(&doc).expect("plain data serializes");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The merchant function creates red packets (`POST /merchant-packets`), so the red
    /// packets' limits of the deployment bind its packets as they bind `POST /packets`.
    #[test]
    fn the_merchant_function_reads_the_red_packets_limits() {
        let env = |n: &str| (n == "HONGBAO_MAX_TOTAL_CENTS").then(|| "500".to_string());
        let lookup = crate::domain::Lookup::new(&env);
        let config = crate::store::Config::load(&lookup, Function::Merchant.features()).unwrap();
        assert_eq!(config.packets.max_total_cents, 500);
    }

    /// `functions.json` is [`declarations`]' output; `HONGBAO_WRITE_FUNCTIONS=1` (`make
    /// functions`) rewrites it.
    #[test]
    fn functions_json_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../functions.json");
        let want = declarations();
        if std::env::var("HONGBAO_WRITE_FUNCTIONS").as_deref() == Ok("1") {
            std::fs::write(path, &want).expect("write functions.json");
            return;
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "functions.json is not what the declarations give: run `make functions`"
        );
    }

    /// Every operation the functions route, in their order.
    fn all_operations() -> Vec<&'static crate::api::operation::Operation> {
        Function::ALL
            .iter()
            .filter_map(|f| f.routes())
            .flat_map(|r| r.operations().to_vec())
            .collect()
    }

    /// docs/idempotency.md's table is [`crate::api::replay::table`] of the operations;
    /// `HONGBAO_WRITE_FUNCTIONS=1` (`make functions`) rewrites it.
    #[test]
    fn the_replay_table_is_current() {
        const START: &str = "<!-- replay table: generated -->\n";
        const END: &str = "<!-- end of the replay table -->";
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/idempotency.md");
        let have = std::fs::read_to_string(path).expect("docs/idempotency.md");
        let (head, rest) = have.split_once(START).expect("the table's start marker");
        let (_, tail) = rest.split_once(END).expect("the table's end marker");
        let want = format!(
            "{head}{START}{}{END}{tail}",
            crate::api::replay::table(
                all_operations()
                    .iter()
                    .filter_map(|op| op.replay.as_ref().map(|r| (op.route_key(), r)))
            )
        );
        if std::env::var("HONGBAO_WRITE_FUNCTIONS").as_deref() == Ok("1") {
            std::fs::write(path, &want).expect("write docs/idempotency.md");
            return;
        }
        assert!(
            have == want,
            "docs/idempotency.md's table is not what the declarations give: run `make functions`"
        );
    }

    /// A replay's changed-call refusal is one of its operation's declared refusals.
    #[test]
    fn each_changed_replay_code_is_a_declared_refusal() {
        for op in all_operations() {
            let Some(crate::api::replay::Replay {
                changed: crate::api::replay::Changed::Refused(code),
                ..
            }) = op.replay
            else {
                continue;
            };
            let refusals = serde_json::to_string(&(op.refusals.responses)()).unwrap();
            let mut schemas = Vec::new();
            (op.refusals.schemas)(&mut schemas);
            let schemas = serde_json::to_string(&schemas).unwrap();
            assert!(
                refusals.contains(code) || schemas.contains(&format!("\"{code}\"")),
                "{}: {code} is not among its refusals",
                op.route_key()
            );
        }
    }

    /// An operation whose success answer has a `repeat` field answers repeats, so it declares
    /// its replay (and its answers carry `Idempotent-Replayed`).
    #[test]
    fn every_answer_with_a_repeat_field_declares_its_replay() {
        let routes = Function::ALL
            .iter()
            .filter_map(|f| f.routes())
            .fold(crate::api::operation::Routes::new(), |all, r| all.merge(r));
        let doc = serde_json::to_value(crate::api::openapi::document(routes)).unwrap();
        for op in all_operations() {
            let method = op.method.as_str().to_lowercase();
            let responses = &doc["paths"][op.path][&method]["responses"];
            let repeats = responses
                .as_object()
                .unwrap()
                .iter()
                .filter(|(status, _)| status.starts_with('2'))
                .filter_map(|(_, r)| r["content"]["application/json"]["schema"]["$ref"].as_str())
                .any(|r| {
                    let name = r.rsplit('/').next().unwrap();
                    doc["components"]["schemas"][name]["properties"]["repeat"].is_object()
                });
            assert!(
                !repeats || op.replay.is_some(),
                "{} answers `repeat` but declares no replay",
                op.route_key()
            );
        }
    }

    /// Names, logical ids, routes and template events are unique, and every function's
    /// directory exists: a copy-pasted declaration fails here, not in a deploy.
    #[test]
    fn declarations_are_unique_and_each_function_has_its_crate() {
        let mut names = BTreeSet::new();
        let mut ids = BTreeSet::new();
        let mut routes = BTreeSet::new();
        let mut events = BTreeSet::new();
        for &f in Function::ALL {
            let d = f.declaration();
            assert!(names.insert(d.name), "{} twice", d.name);
            assert!(ids.insert(d.logical_id), "{} twice", d.logical_id);
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../functions/");
            assert!(
                std::path::Path::new(&format!("{dir}{}/Cargo.toml", d.name)).exists(),
                "functions/{} has no crate",
                d.name
            );
            assert_eq!(
                f.routes().is_some(),
                d.trigger == Trigger::Http,
                "{}: an HTTP function has routes, a scheduled one none",
                d.name
            );
            for op in f.operations() {
                assert!(routes.insert(op.route_key()), "{} twice", op.route_key());
                assert!(events.insert(op.event), "event {} twice", op.event);
            }
        }
    }

    /// The OpenAPI document has exactly the declared operations (method and path), and asks
    /// for `sigv4` security exactly on the AWS_IAM ones: a route added, moved or re-authorized
    /// on one side only fails here.
    #[test]
    fn openapi_documents_exactly_the_declared_operations() {
        use crate::api::operation::Auth;
        let doc: serde_json::Value = serde_json::from_str(&super::super::openapi::json()).unwrap();
        let mut documented = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let sigv4 = op["security"]
                    .as_array()
                    .is_some_and(|s| s.iter().any(|r| r.get("sigv4").is_some()));
                documented.insert((format!("{} {path}", method.to_uppercase()), sigv4));
            }
        }
        let declared: BTreeSet<(String, bool)> = Function::ALL
            .iter()
            .flat_map(|f| f.operations())
            .map(|op| (op.route_key(), matches!(op.auth, Auth::Iam { .. })))
            .collect();
        let only_documented: Vec<_> = documented.difference(&declared).collect();
        let only_declared: Vec<_> = declared.difference(&documented).collect();
        assert!(
            only_documented.is_empty() && only_declared.is_empty(),
            "(route, sigv4) only in openapi: {only_documented:?}; only declared: {only_declared:?}"
        );
    }

    /// Every operation of a setting whose principals may be bound to merchants declares whose
    /// merchant it touches (its handler checks it), and no other declares one: a merchant or
    /// coupon route added without its tenant check fails here (and in the per-route test,
    /// `tests/it/tenants.rs`).
    #[test]
    fn merchant_bound_operations_declare_their_merchant() {
        use crate::api::operation::Tenant;
        use crate::coupons::rules::settings::COUPON_PRINCIPALS;
        use crate::merchants::rules::MERCHANT_PRINCIPALS;
        let bound = [MERCHANT_PRINCIPALS.name, COUPON_PRINCIPALS.name];
        let wrong: Vec<String> = Function::ALL
            .iter()
            .flat_map(|f| f.operations())
            .filter_map(|op| {
                let by_merchant = op.principals().is_some_and(|p| bound.contains(&p.name));
                let declares = matches!(op.tenant(), Some(Tenant::Merchant(_)));
                (by_merchant != declares).then(|| op.route_key())
            })
            .collect();
        assert!(wrong.is_empty(), "tenant declared wrong: {wrong:?}");
    }
}
