//! Bad inputs, as tables: 400 (401, 403, 404, 405 where due) and nothing written; unknown
//! articles create no key.

use harness::{Backend, TestRedis};
use serde_json::{json, Value};

use super::{call, post, with_article, with_group, with_method, with_query};
use crate::common::{
    self, assert_refused, event, with_body, with_sub, without_auth, Function, Refusal,
};

/// Article bodies (`POST /articles`) refused with 400 `invalid_request`.
const POST_INVALID: &[(&str, &str)] = &[
    ("empty body", ""),
    ("malformed JSON", r#"{"title":"#),
    ("JSON array", "[]"),
    (
        "unknown field",
        r#"{"title":"t","link":"http://a.b","tags":[]}"#,
    ),
    ("missing link", r#"{"title":"t"}"#),
    ("missing title", r#"{"link":"http://a.b"}"#),
    ("empty title", r#"{"title":"","link":"http://a.b"}"#),
    ("blank title", r#"{"title":"  ","link":"http://a.b"}"#),
    (
        "control char in title",
        r#"{"title":"a\nb","link":"http://a.b"}"#,
    ),
    ("title not a string", r#"{"title":5,"link":"http://a.b"}"#),
    ("ftp link", r#"{"title":"t","link":"ftp://a.b/"}"#),
    (
        "javascript link",
        r#"{"title":"t","link":"javascript:alert(1)"}"#,
    ),
    ("link without host", r#"{"title":"t","link":"http://"}"#),
    (
        "link with a space",
        r#"{"title":"t","link":"http://a.b/c d"}"#,
    ),
    (
        "link with user info",
        r#"{"title":"t","link":"http://bank.com@evil.com/"}"#,
    ),
];

/// Votes (`POST /articles/{id}/vote`): (name, article id, body, status, error code).
const VOTES: &[(&str, &str, &str, u16, &str)] = &[
    (
        "vote: bad direction",
        "1",
        r#"{"direction":"sideways"}"#,
        400,
        "invalid_request",
    ),
    ("vote: no direction", "1", "{}", 400, "invalid_request"),
    (
        "vote: direction as number",
        "1",
        r#"{"direction":1}"#,
        400,
        "invalid_request",
    ),
    (
        "vote: unknown field",
        "1",
        r#"{"direction":"up","weight":2}"#,
        400,
        "invalid_request",
    ),
    ("vote: empty body", "1", "", 400, "invalid_request"),
    (
        "vote: unknown article",
        "2",
        r#"{"direction":"up"}"#,
        404,
        "not_found",
    ),
    (
        "vote: huge id",
        "999999999999",
        r#"{"direction":"down"}"#,
        404,
        "not_found",
    ),
    ("vote: id 0", "0", r#"{"direction":"up"}"#, 404, "not_found"),
    (
        "vote: leading zero",
        "01",
        r#"{"direction":"up"}"#,
        404,
        "not_found",
    ),
    (
        "vote: not a number",
        "abc",
        r#"{"direction":"up"}"#,
        404,
        "not_found",
    ),
];

/// Queries of the article list (`GET /articles`) refused with 400 `invalid_request`.
const LIST_INVALID: &[(&str, &str)] = &[
    ("list: bad order", "order=hot"),
    ("list: page 0", "page=0"),
    ("list: negative page", "page=-1"),
    ("list: fractional page", "page=1.5"),
    ("list: page too big", "page=100001"),
    ("list: page twice", "page=1&page=2"),
    ("list: unknown parameter", "sort=score"),
];

/// Group changes (`PUT /articles/{id}/groups`) of article 1 refused with 400
/// `invalid_request`.
const GROUPS_INVALID: &[(&str, &str)] = &[
    ("groups: uppercase", r#"{"add":["Rust"]}"#),
    ("groups: empty name", r#"{"add":[""]}"#),
    ("groups: space", r#"{"remove":["a b"]}"#),
    ("groups: add and remove", r#"{"add":["x"],"remove":["x"]}"#),
    ("groups: not a list", r#"{"add":"x"}"#),
    ("groups: unknown field", r#"{"set":["x"]}"#),
];

/// A group's page (`GET /groups/{group}/articles`): (name, group, query), 400
/// `invalid_request` each.
const GROUP_PAGE_INVALID: &[(&str, &str, &str)] = &[
    ("group page: bad name", "Rust", ""),
    ("group page: bad order", "rust", "order=new"),
    ("group page: page 0", "rust", "page=0"),
];

/// Bad inputs (the tables above and the rows below): their 4xx and nothing written; unknown
/// articles create no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_inputs_are_refused_and_write_nothing() {
    for backend in Backend::all() {
        let redis = TestRedis::start(backend);
        let store = common::store(&redis, |_| {});
        post(&store, "alice", "existing").await;
        let mut cases = table_rows();
        cases.extend(long_inputs());
        cases.extend(caller_and_method_refusals());
        let label = backend.to_string();
        assert_refused(&store, &redis, &label, cases, |_| true).await;
        // A well-formed request of each read route works on the same data.
        assert_eq!(call(&store, &event("vote-list")).await.0, 200);
        assert_eq!(call(&store, &event("vote-group-articles")).await.0, 200);
    }
}

fn post_ev(body: &str) -> Value {
    with_body(event("vote-post-article"), body)
}

fn vote_ev(id: &str, body: &str) -> Value {
    with_body(with_article(event("vote-vote"), id), body)
}

fn groups_ev(id: &str, body: &str) -> Value {
    with_body(with_article(event("vote-groups"), id), body)
}

fn list_ev(query: &str) -> Value {
    with_query(event("vote-list"), query)
}

/// The rows of the tables.
fn table_rows() -> Vec<Refusal> {
    let invalid = |name: &str, ev| Refusal::invalid(name, Function::Vote, ev);
    let posts = POST_INVALID
        .iter()
        .map(|(name, body)| invalid(name, post_ev(body)));
    let votes = VOTES.iter().map(|(name, id, body, status, code)| {
        Refusal::new(*name, Function::Vote, vote_ev(id, body), *status, code)
    });
    let lists = LIST_INVALID
        .iter()
        .map(|(name, q)| invalid(name, list_ev(q)));
    let groups = GROUPS_INVALID
        .iter()
        .map(|(name, body)| invalid(name, groups_ev("1", body)));
    let group_pages = GROUP_PAGE_INVALID.iter().map(|(name, group, q)| {
        invalid(
            name,
            with_query(with_group(event("vote-group-articles"), group), q),
        )
    });
    posts
        .chain(votes)
        .chain(lists)
        .chain(groups)
        .chain(group_pages)
        .collect()
}

/// Titles, links and group lists over their limits: 400 `invalid_request`.
fn long_inputs() -> Vec<Refusal> {
    let long_title = "t".repeat(201);
    let long_link = format!("https://example.com/{}", "a".repeat(2029));
    let many: Vec<String> = (0..33).map(|i| format!("g{i}")).collect();
    [
        (
            "title of 201 chars",
            post_ev(&format!(
                r#"{{"title":"{long_title}","link":"http://a.b"}}"#
            )),
        ),
        (
            "link of 2049 chars",
            post_ev(&format!(r#"{{"title":"t","link":"{long_link}"}}"#)),
        ),
        (
            "groups: 33 chars",
            groups_ev("1", &format!(r#"{{"add":["{}"]}}"#, "g".repeat(33))),
        ),
        (
            "groups: too many",
            groups_ev("1", &json!({"add": many}).to_string()),
        ),
    ]
    .into_iter()
    .map(|(name, ev)| Refusal::invalid(name, Function::Vote, ev))
    .collect()
}

/// Refused for the caller, the article or the method: 401, 403, 404, 405 (with its `allow`).
fn caller_and_method_refusals() -> Vec<Refusal> {
    let row = |name: &str, ev, status, code| Refusal::new(name, Function::Vote, ev, status, code);
    let add_x = || groups_ev("1", r#"{"add":["x"]}"#);
    vec![
        row(
            "vote: without JWT",
            without_auth(vote_ev("1", r#"{"direction":"up"}"#)),
            401,
            "unauthorized",
        ),
        row(
            "list: without JWT",
            without_auth(list_ev("")),
            401,
            "unauthorized",
        ),
        row(
            "list: wrong method",
            with_method(list_ev(""), "DELETE"),
            405,
            "method_not_allowed",
        )
        .allowing("GET, POST"),
        row(
            "groups: unknown article",
            groups_ev("2", r#"{"add":["x"]}"#),
            404,
            "not_found",
        ),
        row(
            "groups: not the poster",
            with_sub(add_x(), "bob"),
            403,
            "forbidden",
        ),
        row(
            "groups: wrong method",
            with_method(add_x(), "POST"),
            405,
            "method_not_allowed",
        )
        .allowing("PUT"),
    ]
}
