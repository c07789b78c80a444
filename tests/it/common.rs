//! Helpers shared by the integration suites: a [`Store`] on a test Redis, deposits, packets,
//! API Gateway events and the one [`call`] that sends them through a function's router.

use std::sync::Arc;

use serde_json::{json, Value};

use harness::TestRedis;
use hongbao::api::operation::Operation;
use hongbao::api::{ApiState, AuthMode};
use hongbao::domain::split::{LuckySplit, Mode};
pub use hongbao::lambda::Function;
use hongbao::packets::{self, CreateOutcome, NewPacket, Packet};
use hongbao::store::scripts::{Call, ClaimCall};
use hongbao::wallet;
use hongbao::wallet::rules::IamPrincipals;
use hongbao::{Config, Store};

/// The IAM role of the deposit and withdrawal fixtures (`events/wallet-deposit.json`,
/// `events/wallet-withdrawal.json`), as a principal prefix.
pub const DEPOSIT_PRINCIPALS: &str = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/*";

/// The team's own backend, the fixtures' AWS_IAM caller (`userArn` of `events/*.json`): inside
/// [`DEPOSIT_PRINCIPALS`], acting for every merchant.
pub const TEAM: &str = "arn:aws:sts::123456789012:assumed-role/hongbao-payments/payments-backend";

/// A store on `redis` with the default configuration changed by `tweak`; deposits and
/// withdrawals, coupon campaigns and redemptions, the support look-ups and the merchant routes
/// are allowed from [`DEPOSIT_PRINCIPALS`]. On the 3-master + 3-replica cluster (`make replicas`) every
/// money write is acknowledged by its replica (`REDIS_WAIT_REPLICAS=1`), so the suites also
/// prove that WAIT changes no answer.
pub fn store(redis: &TestRedis, tweak: impl FnOnce(&mut Config)) -> Arc<Store> {
    let replicated =
        redis.is_cluster() && std::env::var(harness::REPLICAS_ENV).as_deref() == Ok("1");
    // 5 s for a reply, not the default 1 s: the `it` binary runs 12 tests at once on 2 cores
    // (beside `a_large_drop_on_the_cluster`), where a reply 1 s late is load, not a fault; the
    // fault suites set their own timeouts.
    let mut cfg = Config {
        redis_url: redis.url(),
        redis_cluster: redis.is_cluster(),
        wait_replicas: u32::from(replicated),
        wait_timeout_ms: 5_000,
        response_timeout: std::time::Duration::from_secs(5),
        ..Config::default()
    };
    cfg.wallet.deposit_principals = IamPrincipals::parse(DEPOSIT_PRINCIPALS).unwrap();
    cfg.wallet.withdrawal_principals = IamPrincipals::parse(DEPOSIT_PRINCIPALS).unwrap();
    cfg.coupons.principals = IamPrincipals::parse(DEPOSIT_PRINCIPALS).unwrap();
    cfg.wallet.support_principals = IamPrincipals::parse(DEPOSIT_PRINCIPALS).unwrap();
    cfg.merchants.principals = IamPrincipals::parse(DEPOSIT_PRINCIPALS).unwrap();
    // The per-user quotas are off here: suites create hundreds of packets and take whole days
    // of codes from one user. `handlers::quotas::abuse_quotas` runs them at their production defaults.
    cfg.packets.packets_per_minute = 0;
    cfg.packets.packets_per_day = 0;
    cfg.packets.max_open_packets = 0;
    cfg.order_codes.per_user_per_day = 0;
    cfg.voting.articles_per_day = 0;
    tweak(&mut cfg);
    Arc::new(Store::new(cfg))
}

/// Deposits `cents` to `user` with a fresh reference.
pub async fn fund(store: &Store, user: &str, cents: i64) {
    let reference = format!("test-{}", rand::random::<u64>());
    let out = wallet::deposit(store, user, cents, &reference)
        .await
        .expect("deposit");
    assert!(
        matches!(out, wallet::DepositOutcome::Applied { .. }),
        "{out:?}"
    );
}

/// A lucky (double-mean) packet request.
pub fn lucky(total_cents: i64, count: u32, expires_in_secs: u64) -> NewPacket {
    NewPacket {
        total_cents,
        count,
        mode: Mode::Lucky,
        split: LuckySplit::DoubleMean,
        expires_in_secs,
        greeting: Some("恭喜发财".into()),
        recipients: Vec::new(),
        opens_in_secs: 0,
        cover: None,
        password: None,
        draw: None,
    }
}

/// Creates a packet that must succeed.
pub async fn create(store: &Store, sender: &str, req: &NewPacket) -> Packet {
    match packets::create(store, sender, req, None)
        .await
        .expect("create")
    {
        CreateOutcome::Created(p) => p,
        other => panic!("create failed: {other:?}"),
    }
}

/// Claim step 1 only (`claim.lua` on the packet's slot), as if the Lambda died right after
/// it: the claim is `pending` and its credit not yet made. Returns the script's reply as text.
pub async fn claim_step_one(store: &Store, packet_id: &str, user: &str) -> Vec<String> {
    let pk = hongbao::store::keys::Keys::new(&store.config().key_prefix).packet(packet_id);
    let mut conn = store.conn().await.expect("conn");
    let reply: redis::Value = ClaimCall {
        meta: &pk.meta,
        grabs: &pk.grabs,
        claims: &pk.claims,
        coupons: &pk.coupons,
        books: &pk.meta,
        journal: &pk.meta,
        user_id: user,
        books_of: "",
        call: "",
    }
    .invocation()
    .invoke_async(&mut conn)
    .await
    .expect("claim step 1");
    hongbao::store::scripts::texts("claim", reply).expect("claim reply")
}

/// Asserts wallets + packets = `deposits`.
pub async fn assert_conserved(
    store: &Store,
    users: &[String],
    packet_ids: &[String],
    deposits: i64,
) {
    let t = hongbao::store::audit::totals(store, users, packet_ids)
        .await
        .expect("audit");
    assert_eq!(
        t.total(),
        deposits,
        "money not conserved: wallets {} + packets {} != deposits {deposits}",
        t.wallets_cents,
        t.packets_cents
    );
}

/// Waits until Redis `TIME` is past `ms` (Unix milliseconds).
pub async fn sleep_until_redis_ms(store: &Store, ms: i64) {
    let mut conn = store.conn().await.expect("conn");
    loop {
        let (s, us): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .expect("TIME");
        let now = s * 1000 + us / 1000;
        if now > ms {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(
            ((ms - now) as u64).min(200) + 1,
        ))
        .await;
    }
}

/// Loads the API Gateway event fixture `events/<name>.json`.
pub fn event(name: &str) -> Value {
    let path = format!("{}/../events/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // The campaign fixtures' times are placeholders (a fixed date would pass), filled as
    // scripts/hongbao_tools/events.py fills them: the end 30 days ahead, the redemption
    // deadline 60 days ahead.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for (placeholder, days) in [("ENDS_AT", 30), ("REDEEM_BY", 60)] {
        let at = hongbao::api::error::rfc3339(now + days * 86_400_000);
        text = text.replace(placeholder, &at);
    }
    serde_json::from_str(&text).unwrap()
}

/// Sets the JWT claim `sub` (the caller).
pub fn with_sub(mut v: Value, sub: &str) -> Value {
    v["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    v
}

/// Sets the body (a JSON string, as API Gateway sends it).
pub fn with_body(mut v: Value, body: &str) -> Value {
    v["body"] = json!(body);
    v
}

/// Removes the authorizer context (no verified caller).
pub fn without_auth(mut v: Value) -> Value {
    v["requestContext"]
        .as_object_mut()
        .unwrap()
        .remove("authorizer");
    v
}

/// Sets a request header.
pub fn with_header(mut v: Value, k: &str, val: &str) -> Value {
    v["headers"][k] = json!(val);
    v
}

/// A function's router over `store` (identity from the JWT claim `sub`), as API Gateway
/// events reach it: the router its `main` serves ([`Function::router`]), built once per store
/// and function as a sandbox builds it once at Init. Building it (every route's OpenAPI
/// schemas) per request was most of the CPU of a 600,000-grab test.
pub fn router(f: Function, store: &Arc<Store>) -> axum::Router {
    type Built = Vec<(Arc<Store>, Function, axum::Router)>;
    static BUILT: std::sync::Mutex<Built> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    // The entry holds its store, so no other store can take its address while it is listed.
    if let Some((_, _, r)) = built
        .iter()
        .find(|(s, g, _)| Arc::ptr_eq(s, store) && *g == f)
    {
        return r.clone();
    }
    let state = ApiState {
        store: store.clone(),
        auth: AuthMode::Jwt,
    };
    let router = f
        .router(state)
        .unwrap_or_else(|| panic!("{} serves no HTTP", f.name()));
    let router = hongbao::lambda::for_api_gateway(router);
    built.push((store.clone(), f, router.clone()));
    router
}

/// Sends the API Gateway HTTP API event `v` through function `f`'s router, the way
/// `lambda_http` delivers it; returns (status, JSON body, `Retry-After`). Every answer must be
/// JSON.
pub async fn call(store: &Arc<Store>, f: Function, v: &Value) -> (u16, Value, Option<String>) {
    let (status, body, headers) = answer(store, f, v).await;
    let retry = headers
        .get("retry-after")
        .map(|h| h.to_str().unwrap().to_string());
    (status, body, retry)
}

/// As [`call`], with every header of the answer.
pub async fn answer(
    store: &Arc<Store>,
    f: Function,
    v: &Value,
) -> (u16, Value, axum::http::HeaderMap) {
    use tower::ServiceExt;
    let req = lambda_http::request::from_str(&v.to_string()).expect("event parses as a request");
    let resp = router(f, store).oneshot(req).await.expect("infallible");
    let status = resp.status().as_u16();
    assert_eq!(
        resp.headers()
            .get("content-type")
            .map(|h| h.to_str().unwrap()),
        Some("application/json"),
        "status {status}"
    );
    if status == 405 {
        assert!(resp.headers().contains_key("allow"), "405 without Allow");
    }
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    let body: Value = serde_json::from_slice(&bytes).expect("JSON body");
    (status, body, headers)
}

/// Every key and its serialized value (DUMP), to prove "nothing changed".
pub async fn snapshot(redis: &harness::TestRedis) -> Vec<(String, Option<Vec<u8>>)> {
    let mut conn = redis.raw_conn().await;
    let mut out = Vec::new();
    for key in redis.all_keys().await {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, dump));
    }
    out
}

/// Every key and its serialized value as [`snapshot`], without the refused deposits' and
/// withdrawals' call answers (`<holder>:call:<call id>`, kept for a re-send, with a TTL: the
/// one thing such a refusal writes); panics if one of those has no TTL.
pub async fn snapshot_but_call_answers(
    redis: &harness::TestRedis,
) -> Vec<(String, Option<Vec<u8>>)> {
    let mut conn = redis.raw_conn().await;
    let mut out = snapshot(redis).await;
    for (key, _) in &out {
        if key.contains(":call:") {
            let ttl: i64 = redis::cmd("PTTL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            assert!(ttl > 0, "{key}: a call answer without a TTL ({ttl})");
        }
    }
    out.retain(|(key, _)| !key.contains(":call:"));
    out
}

/// A ledger-export sink for a run killed between `PutEvents` and the delete
/// ([`export_killed_after_publish`]): every call publishes through `inner` and, once `PutEvents`
/// answered, signals `published` and never returns (a call that failed as a whole returns its
/// error: nothing was published, so the run deletes nothing).
///
/// Every call, not only the first: a run drains up to 8 journals at once (`buffer_unordered`
/// in `ledger_export::run_locked`), and a sink that held only its first call let the other
/// journals' calls return and their entries be deleted before the run was stopped (on a loaded
/// machine the journal suite found 6 or 7 of its 8 entries left). As no call returns once
/// `PutEvents` answered, a run using this sink deletes no entry, releases no lock and never
/// ends once it published anything, however late it is stopped.
pub struct KilledAfterPublish {
    inner: hongbao::lambda::ledger_export::eventbridge::EventBridgeSink,
    published: tokio::sync::Notify,
}

impl KilledAfterPublish {
    /// A sink over `inner`.
    pub fn new(inner: hongbao::lambda::ledger_export::eventbridge::EventBridgeSink) -> Self {
        KilledAfterPublish {
            inner,
            published: tokio::sync::Notify::new(),
        }
    }

    /// Completes once a call's `PutEvents` answered (at once if one already did).
    pub async fn published(&self) {
        self.published.notified().await;
    }
}

impl hongbao::lambda::ledger_export::EventSink for KilledAfterPublish {
    fn publish<'a>(
        &'a self,
        entries: &'a [hongbao::domain::journal::Entry],
    ) -> hongbao::lambda::ledger_export::SinkFuture<'a> {
        Box::pin(async move {
            self.inner.publish(entries).await?;
            // A permit is stored when nobody waits yet: the signal is never lost.
            self.published.notify_one();
            std::future::pending().await
        })
    }
}

/// Runs a ledger export through `inner` and kills it (drops the run) once it has published,
/// before any delete: the run is stuck in [`KilledAfterPublish`] from its first answered
/// `PutEvents` on, so the journals are exactly as they were before the run whenever the drop
/// lands. Then removes the export lock, as its TTL would. A run that ends before publishing
/// anything (its time used up by the pass over the journals on a loaded machine, or every
/// `PutEvents` failed) deleted nothing and is run again, up to 10 times.
pub async fn export_killed_after_publish(
    store: &Store,
    redis: &TestRedis,
    inner: hongbao::lambda::ledger_export::eventbridge::EventBridgeSink,
) {
    let sink = KilledAfterPublish::new(inner);
    let index = hongbao::store::journal::JournalIndex::new("hb");
    let mut attempts = Vec::new();
    loop {
        tokio::select! {
            // The run is dropped here, in this task: it cannot go on meanwhile elsewhere.
            () = sink.published() => break,
            r = hongbao::lambda::ledger_export::run_until(store, &index, &sink, None) => {
                attempts.push(r);
                assert!(attempts.len() < 10, "no run published anything: {attempts:?}");
            }
        }
    }
    let mut conn = redis.raw_conn().await;
    let _: () = redis::cmd("DEL")
        .arg("hb:{export}:lock")
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// `CONFIG RESETSTAT` on every master: `INFO commandstats` counts from zero.
pub async fn reset_stats(redis: &TestRedis) {
    redis
        .on_every_node(redis::cmd("CONFIG").arg("RESETSTAT").clone())
        .await;
}

/// `calls=` of `cmdstat_<command>` summed over every master (`INFO commandstats`; the commands
/// scripts run count too).
pub async fn command_calls(redis: &TestRedis, command: &str) -> u64 {
    let prefix = format!("cmdstat_{command}:calls=");
    let mut cmd = redis::cmd("INFO");
    cmd.arg("commandstats");
    let mut total = 0;
    for reply in redis.on_every_node(cmd).await {
        let info: String = redis::from_redis_value(reply).unwrap();
        total += info
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .map(|rest| rest.split(',').next().unwrap().parse::<u64>().unwrap())
            .sum::<u64>();
    }
    total
}

/// Replaces every `placeholder` in the event (`PACKET_ID`, `ARTICLE_ID`, `CAMPAIGN_ID`, as the
/// fixtures spell them) with `value`.
pub fn with_placeholder(v: Value, placeholder: &str, value: &str) -> Value {
    serde_json::from_str(&v.to_string().replace(placeholder, value)).unwrap()
}

/// An AWS_IAM event of `op` (`events/merchant-deposit.json` reshaped) signed by `arn`: its path with `params` put in, `query`, `body`.
pub fn iam_event(
    op: &Operation,
    arn: &str,
    params: &[(&str, &str)],
    query: &str,
    body: Option<&Value>,
) -> Value {
    let mut v = event("merchant-deposit");
    let mut path = op.path.to_string();
    let mut path_params = json!({});
    for (name, value) in params {
        path = path.replace(&format!("{{{name}}}"), value);
        path_params[*name] = json!(value);
    }
    v["routeKey"] = json!(op.route_key());
    v["requestContext"]["routeKey"] = json!(op.route_key());
    v["rawPath"] = json!(path);
    v["requestContext"]["http"]["path"] = json!(path);
    v["requestContext"]["http"]["method"] = json!(op.method.as_str());
    v["pathParameters"] = path_params;
    let mut v = with_query(v, query);
    v["requestContext"]["authorizer"]["iam"]["userArn"] = json!(arn);
    match body {
        Some(b) => with_body(v, &b.to_string()),
        None => {
            v["body"] = Value::Null;
            v
        }
    }
}

/// The event with query string `raw`: `rawQueryString` (what the handlers read) and
/// `queryStringParameters`, decoded as API Gateway decodes them.
pub fn with_query(mut v: Value, raw: &str) -> Value {
    v["rawQueryString"] = json!(raw);
    let params: serde_json::Map<String, Value> = url::form_urlencoded::parse(raw.as_bytes())
        .map(|(k, val)| (k.into_owned(), json!(val)))
        .collect();
    v["queryStringParameters"] = Value::Object(params);
    v
}

/// One row of a bad-inputs table: a request that must be refused with `status` and the error
/// code `code` (and a non-empty `message`), writing nothing.
pub struct Refusal {
    /// What the row tries, for the failure message.
    pub name: String,
    /// The function whose router gets the event.
    pub function: Function,
    /// The API Gateway event.
    pub event: Value,
    /// The HTTP status expected.
    pub status: u16,
    /// The body's `error` expected.
    pub code: &'static str,
    /// The body's `allow` expected (a 405's methods), when the row checks it.
    pub allow: Option<&'static str>,
}

impl Refusal {
    /// A row refused with `status` and `code`.
    pub fn new(
        name: impl Into<String>,
        function: Function,
        event: Value,
        status: u16,
        code: &'static str,
    ) -> Self {
        Refusal {
            name: name.into(),
            function,
            event,
            status,
            code,
            allow: None,
        }
    }

    /// A row refused with 400 `invalid_request`.
    pub fn invalid(name: impl Into<String>, function: Function, event: Value) -> Self {
        Refusal::new(name, function, event, 400, "invalid_request")
    }

    /// The same row, whose 405 must also name `allow` as the allowed methods.
    pub fn allowing(self, allow: &'static str) -> Self {
        Refusal {
            allow: Some(allow),
            ..self
        }
    }
}

/// Sends every row of a bad-inputs table through its function on `store`: each gets its status,
/// error code and a message (and its `allow`), and after each the keys of `redis` that `kept`
/// selects, with their values, are what they were before (and there were some). `label` (the
/// backend) starts each failure message.
pub async fn assert_refused(
    store: &Arc<Store>,
    redis: &TestRedis,
    label: &str,
    cases: Vec<Refusal>,
    kept: fn(&str) -> bool,
) {
    let state = || async {
        let mut all = snapshot(redis).await;
        all.retain(|(key, _)| kept(key));
        all
    };
    let before = state().await;
    assert!(!before.is_empty());
    for case in cases {
        let name = &case.name;
        let (s, body, _) = call(store, case.function, &case.event).await;
        assert_eq!(
            (s, body["error"].as_str()),
            (case.status, Some(case.code)),
            "{label} {name}: {body}"
        );
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{name}"
        );
        if let Some(allow) = case.allow {
            assert_eq!(body["allow"].as_str(), Some(allow), "{name}");
        }
        assert_eq!(state().await, before, "{label} {name} changed the data");
    }
}

/// What key `key` holds: its type (`TYPE`) and content, `field=value` of a hash in field order,
/// a set's members sorted, `member=score` of a sorted set lowest first, a list's items and a
/// stream's entries (`<id> <fields>`) in order; a missing key is `none` with nothing. Equal
/// before and after a call exactly when the call wrote nothing to it (unlike `DUMP`, whose
/// serialised order of a large hash moves as Redis rehashes it on reads).
pub async fn key_content(store: &Store, key: &str) -> (String, Vec<String>) {
    let mut conn = store.conn().await.unwrap();
    let kind: String = redis::cmd("TYPE")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut items: Vec<String> = match kind.as_str() {
        "none" => Vec::new(),
        "string" => vec![redis::cmd("GET")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap()],
        "hash" => {
            let fields: std::collections::BTreeMap<String, String> = redis::cmd("HGETALL")
                .arg(key)
                .query_async(&mut conn)
                .await
                .unwrap();
            fields
                .into_iter()
                .map(|(f, v)| format!("{f}={v}"))
                .collect()
        }
        "list" => list_items(store, key).await,
        "set" => redis::cmd("SMEMBERS")
            .arg(key)
            .query_async(&mut conn)
            .await
            .unwrap(),
        "zset" => {
            let members: Vec<(String, String)> = zset_with_scores(store, key).await;
            members
                .into_iter()
                .map(|(m, score)| format!("{m}={score}"))
                .collect()
        }
        "stream" => {
            let entries: Vec<(String, Vec<(String, String)>)> = redis::cmd("XRANGE")
                .arg(key)
                .arg("-")
                .arg("+")
                .query_async(&mut conn)
                .await
                .unwrap();
            entries
                .into_iter()
                .map(|(id, f)| format!("{id} {f:?}"))
                .collect()
        }
        other => panic!("{key}: unexpected type {other}"),
    };
    if kind == "set" {
        items.sort();
    }
    (kind, items)
}

/// Every member of the sorted set `key` with its score, lowest first (`ZRANGE key 0 -1
/// WITHSCORES`).
pub async fn zset_with_scores<S: redis::FromRedisValue>(
    store: &Store,
    key: &str,
) -> Vec<(String, S)> {
    let mut conn = store.conn().await.unwrap();
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Every item of the list `key`, first to last (`LRANGE key 0 -1`).
pub async fn list_items(store: &Store, key: &str) -> Vec<String> {
    let mut conn = store.conn().await.unwrap();
    redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap()
}
