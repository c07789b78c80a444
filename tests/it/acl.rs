//! The Redis users of `hongbao::store::acl`, asked of a real server with `ACL DRYRUN`: each
//! user may send every command of its scripts (and its own calls) on every key family it
//! declares, keys built by the store's own key functions, and nothing on the others' keys;
//! none may send a dangerous command.

use harness::RawConn as MultiplexedConnection;
use harness::{Backend, TestRedis};
use hongbao::coupons::keys as coupon_keys;
use hongbao::order_codes::keys as order_code_keys;
use hongbao::store::acl::{KeyFamily, RedisUser};
use hongbao::store::keys::{new_packet_id, user_tag, Keys};
use hongbao::voting::SiteKeys;

const PREFIX: &str = "hb";

/// Real keys of `family`, as the store names them.
fn keys_of(family: KeyFamily) -> Vec<String> {
    let keys = Keys::new(PREFIX);
    let packet = keys.packet(&new_packet_id("alice"));
    let site = SiteKeys::new(PREFIX, "news");
    match family {
        KeyFamily::Packets => vec![packet.meta.clone(), packet.grabs, packet.order],
        KeyFamily::Wallets => {
            let w = keys.wallet("auth0|alice");
            vec![w.wallet, w.ledger, w.records]
        }
        KeyFamily::Merchants => vec![keys.merchant("m-1").merchant, keys.merchant("m-1").ledger],
        KeyFamily::Journals => vec![keys.journal_of_tag(&user_tag("alice"))],
        KeyFamily::Fences => vec![format!("{PREFIX}:{{{}}}:fence", user_tag("alice"))],
        KeyFamily::Reclaim => vec![keys.reclaim_due()],
        KeyFamily::Reconcile => vec![format!("{PREFIX}:{{reconcile}}:cursor")],
        KeyFamily::Export => vec![format!("{PREFIX}:{{export}}:lock")],
        KeyFamily::Coupons => vec![
            coupon_keys::refs(PREFIX),
            coupon_keys::directory(PREFIX, "SPRING-1"),
            coupon_keys::user_coupons(PREFIX, "alice"),
        ],
        KeyFamily::Voting => vec![site.article_seq(), site.group("tech")],
        KeyFamily::OrderCodes => vec![order_code_keys::newest_day_key(PREFIX)],
    }
}

/// A started server with every user of [`RedisUser::ALL`] (password `pw`), and a connection
/// as `default`.
async fn server_with_users() -> (TestRedis, MultiplexedConnection) {
    let redis = TestRedis::start(Backend::Standalone);
    let mut conn = redis.raw_conn().await;
    for user in RedisUser::ALL {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER").arg(user.name()).arg(">pw");
        for rule in user.access_string(PREFIX).split(' ') {
            cmd.arg(rule);
        }
        let _: () = cmd
            .query_async(&mut conn)
            .await
            .expect("the access string is valid");
    }
    (redis, conn)
}

/// What `ACL DRYRUN` said of one command (the texts are read through `Debug`, in the
/// failures' messages).
#[derive(Debug)]
#[allow(dead_code)]
enum Verdict {
    Allowed,
    /// The user may not (the server's reason).
    Denied(String),
    /// The command was not well formed: the test's fault, never a verdict.
    Invalid(String),
}

/// The arity of `command` (`COMMAND INFO`: negative = at least).
async fn arity(conn: &mut MultiplexedConnection, command: &str) -> i64 {
    let info: Vec<redis::Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg(command)
        .query_async(conn)
        .await
        .unwrap();
    match info.first() {
        Some(redis::Value::Array(fields)) => match fields.get(1) {
            Some(redis::Value::Int(n)) => *n,
            other => panic!("{command}: arity {other:?}"),
        },
        other => panic!("{command}: COMMAND INFO {other:?}"),
    }
}

/// `ACL DRYRUN <user> <command> <key> ...`: `key` in every argument (as many as its arity
/// needs; a script's `numkeys` and `ZINTERSTORE`'s are 1).
async fn dryrun(
    conn: &mut MultiplexedConnection,
    user: RedisUser,
    command: &str,
    key: &str,
) -> Verdict {
    let mut args: Vec<String> = match command {
        "eval" | "evalsha" => vec!["return 1".into(), "1".into(), key.into()],
        "zinterstore" => vec![key.into(), "1".into(), key.into()],
        _ => {
            let n = arity(conn, command).await;
            vec![key.to_string(); (n.unsigned_abs() as usize).saturating_sub(1)]
        }
    };
    args.insert(0, command.to_string());
    dryrun_words(conn, user, &args).await
}

/// `ACL DRYRUN <user> <words...>`.
async fn dryrun_words(
    conn: &mut MultiplexedConnection,
    user: RedisUser,
    words: &[String],
) -> Verdict {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("DRYRUN").arg(user.name()).arg(words);
    match cmd.query_async::<redis::Value>(conn).await {
        Ok(redis::Value::Okay) => Verdict::Allowed,
        Ok(redis::Value::SimpleString(s)) if s == "OK" => Verdict::Allowed,
        Ok(redis::Value::BulkString(b)) => {
            Verdict::Denied(String::from_utf8_lossy(&b).into_owned())
        }
        Ok(other) => Verdict::Invalid(format!("{other:?}")),
        Err(e) => Verdict::Invalid(e.to_string()),
    }
}

#[tokio::test]
async fn each_user_may_run_its_scripts_commands_on_its_keys() {
    let (_redis, mut conn) = server_with_users().await;

    let mut refused = Vec::new();
    for &user in RedisUser::ALL {
        for &family in user.families() {
            for key in keys_of(family) {
                for command in user
                    .script_commands()
                    .iter()
                    .chain(["evalsha".to_string()].iter())
                {
                    let verdict = dryrun(&mut conn, user, command, &key).await;
                    if !matches!(verdict, Verdict::Allowed) {
                        refused.push(format!("{} {command} {key}: {verdict:?}", user.name()));
                    }
                }
            }
        }
    }

    assert!(refused.is_empty(), "refused: {refused:#?}");
}

/// Every command the store's code sends outside a script (`cmd("<NAME>")`, and `MULTI` /
/// `EXEC` for an `.atomic()` pipeline), lower case, each once; `CLUSTER` as the subcommands
/// it sends.
fn commands_outside_scripts() -> Vec<String> {
    fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let code = std::fs::read_to_string(&path).unwrap();
                for piece in code.split("cmd(\"").skip(1) {
                    let name = piece.split('"').next().unwrap().to_ascii_lowercase();
                    out.push(name);
                }
                if code.contains(".atomic()") {
                    out.extend(["multi".to_string(), "exec".to_string()]);
                }
            }
        }
    }
    let mut out = Vec::new();
    for dir in ["store", "lambda"] {
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/src")
                .join(dir),
            &mut out,
        );
    }
    out.retain(|c| c != "cluster");
    out.extend(["cluster|info".to_string(), "cluster|slots".to_string()]);
    out.sort();
    out.dedup();
    out
}

#[tokio::test]
async fn each_user_may_send_what_the_store_sends_outside_scripts() {
    let (_redis, mut conn) = server_with_users().await;
    let commands = commands_outside_scripts();

    let mut refused = Vec::new();
    for &user in RedisUser::ALL {
        let key = &keys_of(user.families()[0])[0];
        for command in &commands {
            let verdict = match command.split_once('|') {
                Some((cmd, sub)) => {
                    dryrun_words(&mut conn, user, &[cmd.to_string(), sub.to_string()]).await
                }
                None => dryrun(&mut conn, user, command, key).await,
            };
            if !matches!(verdict, Verdict::Allowed) {
                refused.push(format!("{} {command}: {verdict:?}", user.name()));
            }
        }
    }

    assert!(
        commands.len() > 20,
        "the store's commands were not found: {commands:?}"
    );
    assert!(refused.is_empty(), "refused: {refused:#?}");
}

#[tokio::test]
async fn no_user_touches_another_familys_keys() {
    let (_redis, mut conn) = server_with_users().await;

    let mut allowed = Vec::new();
    for &user in RedisUser::ALL {
        let others = KeyFamily::ALL
            .iter()
            .filter(|f| !user.families().contains(f));
        for &family in others {
            for key in keys_of(family) {
                for command in ["get", "set", "evalsha"] {
                    let verdict = dryrun(&mut conn, user, command, &key).await;
                    if !matches!(verdict, Verdict::Denied(_)) {
                        allowed.push(format!("{} {command} {key}: {verdict:?}", user.name()));
                    }
                }
            }
        }
    }

    assert!(
        allowed.is_empty(),
        "allowed outside the user's families: {allowed:#?}"
    );
}

#[tokio::test]
async fn no_user_sends_a_dangerous_command() {
    let (_redis, mut conn) = server_with_users().await;

    let mut allowed = Vec::new();
    for &user in RedisUser::ALL {
        for words in [
            &["flushall"][..],
            &["keys", "*"],
            &["config", "set", "maxmemory", "1"],
            &["client", "kill", "127.0.0.1:1"],
            &["acl", "setuser", "x"],
            &["script", "flush"],
            &["shutdown"],
        ] {
            let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            let verdict = dryrun_words(&mut conn, user, &words).await;
            if !matches!(verdict, Verdict::Denied(_)) {
                allowed.push(format!("{} {words:?}: {verdict:?}", user.name()));
            }
        }
    }

    assert!(
        allowed.is_empty(),
        "dangerous commands allowed: {allowed:?}"
    );
}

#[tokio::test]
async fn the_vote_user_cannot_credit_a_wallet() {
    let (_redis, mut conn) = server_with_users().await;
    let wallet = Keys::new(PREFIX).wallet("alice").wallet;

    let verdict = dryrun(&mut conn, RedisUser::Vote, "hincrby", &wallet).await;

    assert!(
        matches!(verdict, Verdict::Denied(_)),
        "vote HINCRBY {wallet}: {verdict:?}"
    );
}
