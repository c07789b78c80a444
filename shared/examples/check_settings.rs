//! Runs each function's cold-start settings check ([`hongbao::lambda::settings`], the
//! code path a sandbox's Init runs before it connects) on environments given as JSON, and
//! prints what each function would start with. `tests/template_matrix.py` feeds it the
//! environment `template.yaml` renders for every parameter combination.
//!
//! Input (stdin): `[{"function": "grab", "env": {"REDIS_URL": "...", ...}}, ...]`.
//! Output (stdout), one object per input, in order:
//! `{"function": "grab", "ok": true, "auth": "iam", "username": "...", "iam_cache_name": "...",
//! "iam_service": "elasticache", "iam_resource_type": "ServerlessCache" | null,
//! "cluster": "true" | "auto" | "false", "wait_replicas": 0}` or
//! `{"function": "grab", "ok": false, "error": "<the message Init would fail with>"}`.
//! Only the environment given is read (never the process's). Exit status 2 for bad input.

use std::collections::BTreeMap;
use std::io::Read;

use hongbao::domain::Lookup;
use hongbao::lambda::{settings, Function};
use hongbao::store::redis_auth::AuthKind;
use serde_json::{json, Value};

fn main() {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("check_settings: cannot read stdin: {e}");
        std::process::exit(2);
    }
    let cases: Vec<Value> = match serde_json::from_str(&input) {
        Ok(Value::Array(cases)) => cases,
        _ => {
            eprintln!("check_settings: stdin must be a JSON array of {{function, env}}");
            std::process::exit(2);
        }
    };
    let mut out = Vec::with_capacity(cases.len());
    for case in cases {
        let name = case["function"].as_str().unwrap_or_default().to_string();
        let Some(function) = Function::from_name(&name) else {
            eprintln!("check_settings: unknown function {name:?}");
            std::process::exit(2);
        };
        let env: BTreeMap<String, String> = match &case["env"] {
            Value::Object(vars) => vars
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect(),
            _ => {
                eprintln!("check_settings: {name}: env must be an object of strings");
                std::process::exit(2);
            }
        };
        let get = |var: &str| env.get(var).cloned();
        out.push(match settings(function, &Lookup::new(&get)) {
            Ok(s) => {
                let auth = &s.config.redis_auth;
                let iam = auth.kind == AuthKind::Iam;
                json!({
                    "function": name,
                    "ok": true,
                    "auth": match auth.kind {
                        AuthKind::None => "none",
                        AuthKind::Password => "password",
                        AuthKind::Iam => "iam",
                    },
                    "username": auth.username,
                    "iam_cache_name": if iam { auth.iam_cache_name.clone() } else { None },
                    "iam_service": iam.then(|| auth.iam_target.service()),
                    "iam_resource_type": if iam { auth.iam_target.resource_type() } else { None },
                    "cluster": if s.config.redis_cluster {
                        "true"
                    } else if s.config.redis_cluster_auto {
                        "auto"
                    } else {
                        "false"
                    },
                    "wait_replicas": s.config.wait_replicas,
                })
            }
            Err(e) => json!({"function": name, "ok": false, "error": e.to_string()}),
        });
    }
    println!("{}", Value::Array(out));
}
