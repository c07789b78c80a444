//! The request contract every route keeps, through the routers against real servers: a body
//! is one JSON object declared `application/json` (an array is never bound to a struct's
//! fields by position; any other declared type is 415), a path parameter that is not
//! percent-encoded UTF-8 is a JSON 400 (axum's own answer is `text/plain`), and shown text
//! made of characters that draw nothing is refused. Each refusal writes nothing.

use serde_json::Value;

use harness::{Backend, TestRedis};

use crate::common::{self, call, event, snapshot, with_body, with_header, Function};

/// `v` with its `content-type` header removed.
fn without_content_type(mut v: Value) -> Value {
    if let Some(h) = v["headers"].as_object_mut() {
        h.retain(|k, _| !k.eq_ignore_ascii_case("content-type"));
    }
    v
}

/// `v` with `from` replaced by `to` in its path (`rawPath` and the request context's path),
/// as API Gateway passes a percent-encoded path on.
fn with_path_part(mut v: Value, from: &str, to: &str) -> Value {
    let raw = v["rawPath"].as_str().unwrap().replace(from, to);
    let path = v["requestContext"]["http"]["path"]
        .as_str()
        .unwrap()
        .replace(from, to);
    v["rawPath"] = Value::String(raw);
    v["requestContext"]["http"]["path"] = Value::String(path);
    v
}

/// One case: its name, the function, the event, the expected status and `error` code.
type Case = (String, Function, Value, u16, &'static str);

/// The body routes, each with an event whose body this test replaces.
fn body_routes() -> Vec<(&'static str, Function, Value)> {
    vec![
        (
            "create packet",
            Function::CreatePacket,
            event("create-packet-lucky"),
        ),
        (
            "grab",
            Function::Grab,
            with_body(
                event("grab-grab")
                    .to_string()
                    .replace("PACKET_ID", "0a1b2c3d4e5f60718293a4b5")
                    .parse()
                    .unwrap(),
                r#"{"password": "pw"}"#,
            ),
        ),
        ("deposit", Function::Wallet, event("wallet-deposit")),
        ("withdrawal", Function::Wallet, event("wallet-withdrawal")),
        (
            "order codes",
            Function::NextOrderCode,
            event("next-order-code-batch"),
        ),
        ("post article", Function::Vote, event("vote-post-article")),
        ("vote", Function::Vote, event("vote-vote")),
        ("groups", Function::Vote, event("vote-groups")),
        (
            "create campaign",
            Function::Coupon,
            event("coupon-create-campaign"),
        ),
        ("add codes", Function::Coupon, event("coupon-add-codes")),
        ("redeem", Function::Coupon, event("coupon-redeem")),
        ("hold", Function::Coupon, event("coupon-hold")),
        ("release", Function::Coupon, event("coupon-release")),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    // Arrays and other JSON values in place of the object: `[100,2]` was a 201 and a debit.
    let arrays: [(&str, &str); 13] = [
        ("create packet", "[100,2]"),
        ("grab", r#"["pw"]"#),
        ("deposit", r#"["u",500,"r"]"#),
        ("withdrawal", r#"["alice",500,"w"]"#),
        ("order codes", "[5]"),
        ("post article", r#"["title","https://example.com/"]"#),
        ("vote", r#"["up"]"#),
        ("groups", r#"[["programming"],[]]"#),
        ("create campaign", r#"["t",100]"#),
        ("add codes", r#"["b1",["CODE-1"]]"#),
        ("redeem", r#"["CODE-1","alice","order-1"]"#),
        ("hold", r#"["CODE-1","alice","order-1",600]"#),
        ("release", r#"["CODE-1","order-1"]"#),
    ];
    let routes = body_routes();
    for (route, body) in arrays {
        let (_, f, ev) = routes.iter().find(|r| r.0 == route).unwrap();
        cases.push((
            format!("{route}: array body"),
            *f,
            with_body(ev.clone(), body),
            400,
            "invalid_request",
        ));
    }
    for body in [r#""text""#, "100", "null", "true"] {
        cases.push((
            format!("create packet: body {body}"),
            Function::CreatePacket,
            with_body(event("create-packet-lucky"), body),
            400,
            "invalid_request",
        ));
    }
    // Declared types other than JSON, on every body route with its own valid body.
    for (route, f, ev) in body_routes() {
        for ct in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json; charset=utf-16",
            "application/json; charset=utf-8; boundary=x",
            "application/jsonp",
            "application/problem+json",
        ] {
            cases.push((
                format!("{route}: Content-Type {ct}"),
                f,
                with_header(ev.clone(), "content-type", ct),
                415,
                "unsupported_media_type",
            ));
        }
        cases.push((
            format!("{route}: no Content-Type"),
            f,
            without_content_type(ev.clone()),
            415,
            "unsupported_media_type",
        ));
    }
    // Path parameters that are not percent-encoded UTF-8.
    let bad_paths = [
        (
            "view packet",
            Function::Grab,
            event("grab-view"),
            "PACKET_ID",
        ),
        ("grab", Function::Grab, event("grab-grab"), "PACKET_ID"),
        ("claim", Function::Claim, event("claim-claim"), "PACKET_ID"),
        ("vote", Function::Vote, event("vote-vote"), "ARTICLE_ID"),
        ("groups", Function::Vote, event("vote-groups"), "ARTICLE_ID"),
        (
            "group articles",
            Function::Vote,
            event("vote-group-articles"),
            "programming",
        ),
        (
            "view campaign",
            Function::Coupon,
            event("coupon-view"),
            "CAMPAIGN_ID",
        ),
        (
            "grab coupon",
            Function::Coupon,
            event("coupon-grab"),
            "CAMPAIGN_ID",
        ),
    ];
    for (route, f, ev, placeholder) in bad_paths {
        for bad in ["%ff", "%C3%28", "a%80b"] {
            cases.push((
                format!("{route}: path {bad}"),
                f,
                with_path_part(ev.clone(), placeholder, bad),
                400,
                "invalid_request",
            ));
        }
    }
    // Text of characters that draw nothing: Hangul fillers, the combining grapheme joiner,
    // bare joiners and variation selectors (JSON escapes, as a client would send them).
    for text in [
        r"\u3164",
        r"\u115f",
        r"\u200d",
        r"\u034f",
        r"\ufe0f",
        r"\u3164\u3164",
        r"a\u115fb",
        r"hi\uffa0",
    ] {
        cases.push((
            format!("greeting {text}"),
            Function::CreatePacket,
            with_body(
                event("create-packet-lucky"),
                &format!(r#"{{"total_cents":100,"count":2,"greeting":"{text}"}}"#),
            ),
            400,
            "invalid_request",
        ));
        cases.push((
            format!("title {text}"),
            Function::Vote,
            with_body(
                event("vote-post-article"),
                &format!(r#"{{"title":"{text}","link":"https://example.com/"}}"#),
            ),
            400,
            "invalid_request",
        ));
    }
    cases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_keeps_the_request_contract() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        common::fund(&store, "alice", 50_000).await;
        let before = snapshot(&redis).await;
        for (name, f, ev, status, code) in cases() {
            let (s, body, _) = call(&store, f, &ev).await;
            assert_eq!(
                (s, body["error"].as_str()),
                (status, Some(code)),
                "{backend:?} {name}: {body}"
            );
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{name}"
            );
            assert_eq!(
                snapshot(&redis).await,
                before,
                "{backend:?} {name} changed the data"
            );
        }
        // What the contract accepts: JSON with or without `charset=utf-8`, in any case, and
        // text inside emoji sequences.
        for ct in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON; Charset=\"UTF-8\"",
        ] {
            let ev = with_header(event("create-packet-lucky"), "content-type", ct);
            let ev = with_body(
                ev,
                r#"{"total_cents":100,"count":2,"greeting":"\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67 \u2764\ufe0f"}"#,
            );
            let (s, body, _) = call(&store, Function::CreatePacket, &ev).await;
            assert_eq!(s, 201, "{backend:?} {ct}: {body}");
        }
    }
}
