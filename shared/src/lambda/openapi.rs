//! `openapi.json`: the OpenAPI document of every function's operations
//! ([`crate::api::openapi::document`] of [`Function::ALL`]'s); a test fails when the committed
//! file differs (`make openapi` rewrites it).

use super::Function;

/// The document of every operation a function serves, as pretty-printed JSON with a trailing
/// newline (the content of `openapi.json`).
pub fn json() -> String {
    let routes = Function::ALL
        .iter()
        .filter_map(|f| f.routes())
        .fold(crate::api::Routes::new(), crate::api::Routes::merge);
    crate::api::openapi::json(routes)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    fn document() -> Value {
        serde_json::from_str(&super::json()).unwrap()
    }

    /// Every operation of the document, as `(method, path, operation)`.
    fn operations(doc: &Value) -> Vec<(String, String, Value)> {
        let mut ops = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                ops.push((method.clone(), path.clone(), op.clone()));
            }
        }
        ops
    }

    /// Operation ids are unique (`list` was both `GET /articles` and `GET /packets`),
    /// summaries one line with the detail in `description`, no Rust intra-doc link in any text,
    /// every error answer typed by its codes (no catch-all error schema), 413 and 415 on every
    /// operation with a body, `Retry-After` on every 429 and 503, no nullable header.
    #[test]
    fn operations_are_specific() {
        let doc = document();
        let text = doc.to_string();
        assert!(
            !text.contains("[`"),
            "a Rust intra-doc link in the document"
        );
        assert!(!text.contains("ErrorDoc"));
        let ops = operations(&doc);
        for (i, _) in text.match_indices("\"$ref\":\"#/components/schemas/") {
            let rest = &text[i + "\"$ref\":\"#/components/schemas/".len()..];
            let name = &rest[..rest.find('"').unwrap()];
            assert!(
                doc["components"]["schemas"].get(name).is_some(),
                "unresolved {name}"
            );
        }
        let mut ids = std::collections::HashSet::new();
        for (method, path, op) in &ops {
            let at = format!("{method} {path}");
            let id = op["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_string()), "{at}: operationId {id} twice");
            let summary = op["summary"].as_str().unwrap();
            assert!(
                !summary.contains('\n') && summary.len() < 60,
                "{at}: {summary}"
            );
            assert!(
                op["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{at}"
            );
            let responses = op["responses"].as_object().unwrap();
            if op.get("requestBody").is_some() {
                assert!(responses.contains_key("413"), "{at}: no 413");
                assert!(responses.contains_key("415"), "{at}: no 415");
            }
            for (status, r) in responses {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &r["content"]["application/json"]["schema"]["$ref"];
                    let name = schema
                        .as_str()
                        .unwrap_or_else(|| panic!("{at} {status}: untyped"));
                    let name = name.trim_start_matches("#/components/schemas/");
                    let schema = &doc["components"]["schemas"][name];
                    let alternatives = match schema["oneOf"].as_array() {
                        Some(refs) => refs
                            .iter()
                            .map(|r| {
                                let n = r["$ref"].as_str().unwrap();
                                doc["components"]["schemas"]
                                    [n.trim_start_matches("#/components/schemas/")]
                                .clone()
                            })
                            .collect(),
                        None => vec![schema.clone()],
                    };
                    for s in alternatives {
                        let codes = &s["properties"]["error"];
                        assert_eq!(codes["type"], "string", "{at} {status}: {s}");
                        assert!(codes["enum"].is_array(), "{at} {status}: {s}");
                    }
                }
                if status == "429" || status == "503" {
                    let h = &r["headers"]["Retry-After"]["schema"]["type"];
                    assert_eq!(h, "integer", "{at} {status}");
                }
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                assert!(
                    p["schema"]["type"].as_str().is_some() || p["schema"]["$ref"].is_string(),
                    "{at}: parameter {} nullable",
                    p["name"]
                );
            }
        }
    }

    /// A body that may be absent is optional, never `null`: `POST /order-codes` answers a
    /// JSON `null` with 400.
    #[test]
    fn optional_bodies_are_not_nullable() {
        let doc = document();
        let body = &doc["paths"]["/order-codes"]["post"]["requestBody"];
        assert_eq!(body["required"], Value::Bool(false), "{body}");
        assert_eq!(
            body["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/CountBody"
        );
    }
    /// No two documented types share a name: utoipa keeps one schema per name, so a second
    /// `CodesBody` (the coupon batch's answer) silently replaced the order codes' answer in
    /// the document, and the generated clients parsed `POST /order-codes` as a batch.
    #[test]
    fn schema_names_are_unique() {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    rust_files(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let mut files = Vec::new();
        rust_files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api"),
            &mut files,
        );
        let mut seen = std::collections::BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let documented =
                    line.contains("ToSchema") && line.trim_start().starts_with("#[derive");
                if !documented {
                    continue;
                }
                // The item the derive is on: the first line that declares a struct or enum.
                let Some(decl) = lines[i + 1..].iter().find(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    !l.trim_start().starts_with("//")
                        && words.iter().take(2).any(|w| *w == "struct" || *w == "enum")
                }) else {
                    continue;
                };
                let name = decl
                    .split_whitespace()
                    .skip_while(|w| *w != "struct" && *w != "enum")
                    .nth(1)
                    .unwrap()
                    .trim_end_matches(['{', '(', ';'])
                    .to_string();
                if let Some(other) = seen.insert(name.clone(), file.clone()) {
                    panic!("{name} is documented twice: {other:?} and {file:?}");
                }
            }
        }
    }

    /// `openapi.json` is the generated document (run `make openapi` after changing the API).
    #[test]
    fn committed_openapi_json_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../openapi.json");
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        let generated = super::json();
        if committed != generated {
            if std::env::var_os("HONGBAO_WRITE_OPENAPI").is_some() {
                std::fs::write(path, &generated).expect("write openapi.json");
                return;
            }
            panic!(
                "openapi.json differs from the document the code generates; run `make openapi` \
                 (HONGBAO_WRITE_OPENAPI=1 cargo test -p hongbao --lib openapi) and commit it"
            );
        }
    }
}
