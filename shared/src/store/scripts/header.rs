//! A Lua script's header, the one declaration of its keys, its arguments, its helpers and
//! whether its writes are acknowledged. `shared/build.rs` reads every `lua/<file>` with
//! [`parse`], which checks the header against the script's body, and writes each script's
//! typed call with [`rust`] (included by `store::scripts`); the library compiles this file
//! for its tests only.
//!
//! A header is the script's leading comment block. Its machine-read lines:
//!
//! ```text
//! -- create_packet.lua: debit the sender's wallet and create a red packet, atomically.
//! -- helpers: records.lua quota.lua history.lua journal.lua ledger.lua
//! -- acknowledged: WAIT for REDIS_WAIT_REPLICAS replicas before the answer
//! -- redis users: app
//! -- KEYS[1] wallet: sender wallet hash (field `balance`, integer cents)
//! -- ARGV[3] total_cents (i64): the packet's total, cents
//! --          (a continuation line starts with `--` and two or more spaces)
//! -- ARGV[31..30+count] share_amounts (&[i64]): a variable number of values
//! -- KEYS[m+1] newest_day: one value after a variable part (its index an expression)
//! ```
//!
//! The first line names the file and says what the script does (the docs of its static and
//! its call). `helpers:` lists the files prepended to it, in order. `acknowledged:` marks a
//! script whose writes must reach the replicas before its answer (every script that journals
//! must say it). `redis users:` names the Redis users whose functions run it (at least one;
//! `store::acl` gives each user the commands of its scripts). Each `KEYS[n]` / `ARGV[n]` line is a field of the call, in order: its name,
//! its Rust type in parentheses when it is not `&str` (a reference borrows for the call), its
//! doc. Indices count from 1 up to the first variable part (a slice type, index `a..b` or
//! `a..`); after it an index is an expression; the highest literal `KEYS[n]` / `ARGV[n]` the
//! body reads is the number of entries before the first variable part.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One `-- KEYS[index] name (type): doc` or `-- ARGV[...]` entry of a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// As written between the brackets: `3`, `31..30+count`, `m+1`.
    pub index: String,
    /// The call's field name.
    pub name: String,
    /// The field's type as written (`&str` when the header gives none).
    pub ty: String,
    /// The entry's text, continuation lines joined.
    pub doc: String,
}

impl Entry {
    /// A variable number of values: an index range `a..b` or `a..`.
    fn repeated(&self) -> bool {
        self.index.contains("..")
    }

    /// The field's Rust type: every reference borrows for `'a`.
    fn rust_type(&self) -> String {
        self.ty.replace('&', "&'a ")
    }
}

/// An entry-point script's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The file name, e.g. `grab.lua` (unique among the scripts).
    pub file: String,
    /// The file's path from the repository's root, e.g. `lua/withdraw.lua` or
    /// `shared/src/order_codes/next/order_code.lua`.
    pub path: String,
    /// What the script does: the first paragraph of its `-- <file>: ` line.
    pub summary: String,
    /// The files prepended to it, in order.
    pub helpers: Vec<String>,
    /// Its writes are on `REDIS_WAIT_REPLICAS` replicas before its answer.
    pub acknowledged: bool,
    /// The Redis users whose functions run it (`store::acl::RedisUser::name`).
    pub users: Vec<String>,
    /// Its KEYS, in order.
    pub keys: Vec<Entry>,
    /// Its ARGV, in order.
    pub argv: Vec<Entry>,
}

impl Header {
    /// `create_packet.lua` → `CREATE_PACKET`.
    pub fn static_name(&self) -> String {
        self.stem().to_ascii_uppercase()
    }

    /// `create_packet.lua` → `CreatePacketCall`.
    pub fn call_name(&self) -> String {
        let mut name: String = self
            .stem()
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect();
        name.push_str("Call");
        name
    }

    fn stem(&self) -> &str {
        self.file.trim_end_matches(".lua")
    }
}

/// The leading comment block of a script.
fn header_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().take_while(|l| l.starts_with("--"))
}

/// A continuation line: `--` and two or more spaces.
fn continuation(line: &str) -> Option<&str> {
    line.strip_prefix("--  ").map(str::trim_start)
}

/// The entries of `array` (`KEYS` or `ARGV`) in the header, in order.
fn entries(text: &str, array: &str) -> Result<Vec<Entry>, String> {
    let start = format!("-- {array}[");
    let lines: Vec<&str> = header_lines(text).collect();
    let mut out = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix(&start) else {
            continue;
        };
        let (index, rest) = rest
            .split_once("] ")
            .ok_or_else(|| format!("`{line}`: no `] `"))?;
        let (field, doc) = rest
            .split_once(": ")
            .ok_or_else(|| format!("`{line}`: no `name: `"))?;
        let (name, ty) = match field.split_once(" (") {
            Some((name, ty)) => match ty.strip_suffix(')') {
                Some(ty) if !ty.is_empty() => (name, ty),
                _ => return Err(format!("`{line}`: a type is `name (type): `")),
            },
            None => (field, "&str"),
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(format!("`{line}`: `{name}` is not a field name"));
        }
        let mut doc = doc.to_string();
        for more in lines[at + 1..].iter().map_while(|l| continuation(l)) {
            doc.push(' ');
            doc.push_str(more);
        }
        out.push(Entry {
            index: index.to_string(),
            name: name.to_string(),
            ty: ty.to_string(),
            doc,
        });
    }
    Ok(out)
}

/// The literal indices `n` of `array[n]` in the script's body (after the header, comments
/// left out), and whether the body also reads a computed index (`array[i]`, `array[#KEYS + 2]`).
fn body_indices(text: &str, array: &str) -> (BTreeSet<usize>, bool) {
    let skip = header_lines(text).count();
    let open = format!("{array}[");
    let (mut literal, mut computed) = (BTreeSet::new(), false);
    for line in text.lines().skip(skip) {
        let code = line.split("--").next().unwrap_or("");
        for (at, _) in code.match_indices(&open) {
            let rest = &code[at + open.len()..];
            let inner = rest.split(']').next().unwrap_or("");
            match inner.parse() {
                Ok(n) => {
                    literal.insert(n);
                }
                Err(_) => computed = true,
            }
        }
    }
    (literal, computed)
}

/// Checks one array's entries: indices in place, a variable part a slice, the body's indices.
fn check_array(text: &str, array: &str, entries: &[Entry]) -> Result<(), String> {
    let mut names = BTreeSet::new();
    let mut fixed = 0;
    let mut after_repeated = false;
    for (i, e) in entries.iter().enumerate() {
        let at = format!("{array}[{}] {}", e.index, e.name);
        if !names.insert(e.name.as_str()) {
            return Err(format!("{at}: the name is used twice"));
        }
        if e.repeated() != e.ty.starts_with("&[") {
            return Err(format!(
                "{at}: a variable part (index `a..b`) is exactly a slice type (`&[...]`), got `{}`",
                e.ty
            ));
        }
        let first = e.index.split("..").next().unwrap_or("");
        if !after_repeated && first != (i + 1).to_string() {
            return Err(format!("{at}: expected index {}", i + 1));
        }
        if after_repeated && first.parse::<usize>().is_ok() {
            return Err(format!(
                "{at}: after a variable part an index is an expression"
            ));
        }
        if e.repeated() {
            after_repeated = true;
        } else if !after_repeated {
            fixed += 1;
        }
    }
    let (literal, computed) = body_indices(text, array);
    let highest = literal.last().copied().unwrap_or(0);
    if highest != fixed {
        return Err(format!(
            "{array}: the header has {fixed} fixed entries, the body reads up to \
             {array}[{highest}] (literal indices {literal:?})"
        ));
    }
    if after_repeated && !computed {
        return Err(format!(
            "{array}: the header has a variable part, the body reads no computed index"
        ));
    }
    Ok(())
}

/// Reads the header of the script at `path` (from the repository's root): `None` for a helper
/// (a file without `-- KEYS[` lines), else the checked header. `helper_files` are the files a
/// script may name in `helpers:`.
///
/// # Errors
/// The first mismatch, as `<path>: <what>`.
pub fn parse(path: &str, text: &str, helper_files: &[&str]) -> Result<Option<Header>, String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let at = |e: String| format!("{path}: {e}");
    let keys = entries(text, "KEYS").map_err(at)?;
    if keys.is_empty() {
        return Ok(None);
    }
    let argv = entries(text, "ARGV").map_err(at)?;
    check_array(text, "KEYS", &keys).map_err(at)?;
    check_array(text, "ARGV", &argv).map_err(at)?;
    let lines: Vec<&str> = header_lines(text).collect();
    let first = format!("-- {file}: ");
    let summary_at = lines
        .iter()
        .position(|l| l.starts_with(&first))
        .ok_or_else(|| at(format!("no `{first}` line")))?;
    let mut summary = lines[summary_at][first.len()..].to_string();
    for more in lines[summary_at + 1..]
        .iter()
        .map_while(|l| l.strip_prefix("-- ").filter(|m| !m.is_empty()))
    {
        if more.starts_with("KEYS[") || more.starts_with("ARGV[") || more.starts_with("helpers:") {
            break;
        }
        summary.push(' ');
        summary.push_str(more.trim_start());
    }
    let helpers: Vec<String> = lines
        .iter()
        .find_map(|l| l.strip_prefix("-- helpers: "))
        .map(|h| h.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    if let Some(h) = helpers.iter().find(|h| !helper_files.contains(&h.as_str())) {
        return Err(at(format!("`helpers: {h}` is not a helper of lua/")));
    }
    let acknowledged = lines.iter().any(|l| l.starts_with("-- acknowledged: "));
    let users: Vec<String> = lines
        .iter()
        .find_map(|l| l.strip_prefix("-- redis users: "))
        .map(|u| u.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    if users.is_empty() {
        return Err(at(
            "no `-- redis users: <name> ...` line: no Redis user could run it".into(),
        ));
    }
    let journals = helpers.iter().any(|h| h == "journal.lua") && text.contains("journal_add(");
    if journals && !acknowledged {
        return Err(at(
            "it journals (journal_add) but has no `acknowledged:` line: an entry lost in a \
             failover would be a movement the feed never hears of"
                .into(),
        ));
    }
    Ok(Some(Header {
        file: file.to_string(),
        path: path.to_string(),
        summary,
        helpers,
        acknowledged,
        users,
        keys,
        argv,
    }))
}

/// `text` as Markdown that rustdoc shows as written: `[`, `]`, `<`, `>` and `*` escaped
/// outside backtick spans.
fn doc_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut code = false;
    for c in text.chars() {
        if c == '`' {
            code = !code;
        } else if !code && matches!(c, '[' | ']' | '<' | '>' | '*') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The Rust of every script: its static ([`Lua`](crate::store::scripts::Lua), helpers
/// prepended), its call struct with `Call`, the list of acknowledged scripts and the list of
/// all scripts. `headers` in file order.
pub fn rust(headers: &[Header]) -> String {
    let mut out =
        String::from("// Written by shared/build.rs from the headers of the scripts.\n\n");
    for h in headers {
        let (stat, call) = (h.static_name(), h.call_name());
        let code = |f: &str| format!("include_str!(concat!(env!(\"OUT_DIR\"), \"/lua/{f}\"))");
        let parts: Vec<String> = h
            .helpers
            .iter()
            .chain(std::iter::once(&h.file))
            .map(|f| code(f))
            .collect();
        let helpers = if h.helpers.is_empty() {
            String::new()
        } else {
            format!(" (after {})", h.helpers.join(", "))
        };
        let doc = doc_text(&format!("`{}`{helpers}: {}", h.path, h.summary));
        let _ = writeln!(
            out,
            "#[doc = {doc:?}]\npub static {stat}: LazyLock<Lua> = LazyLock::new(|| Lua::new({:?}, {:?}, concat!({})));\n",
            h.file,
            h.path,
            parts.join(", ")
        );
        let doc = format!(
            "A call of [`{stat}`] (`{}`): its KEYS, then its ARGV, as the script's header declares them.",
            h.path
        );
        let _ = writeln!(
            out,
            "#[doc = {doc:?}]\n#[derive(Clone, Copy, Default)]\npub struct {call}<'a> {{"
        );
        for e in h.keys.iter().chain(&h.argv) {
            let _ = writeln!(
                out,
                "    #[doc = {:?}]\n    pub {}: {},",
                doc_text(&e.doc),
                e.name,
                e.rust_type()
            );
        }
        let names = |es: &[Entry]| {
            es.iter()
                .map(|e| format!("{:?}", e.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            out,
            "}}\n\n/// The struct's name only: values may be secrets or user ids.\n\
             impl std::fmt::Debug for {call}<'_> {{\n    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {{\n        f.debug_struct({call:?}).finish_non_exhaustive()\n    }}\n}}\n\n\
             impl Call for {call}<'_> {{\n    const KEYS: &'static [&'static str] = &[{}];\n    const ARGV: &'static [&'static str] = &[{}];\n\n    fn lua() -> &'static Lua {{\n        &{stat}\n    }}\n\n    fn write<S: Sink>(&self, out: &mut S) {{",
            names(&h.keys),
            names(&h.argv)
        );
        for e in &h.keys {
            let _ = writeln!(out, "        out.key({:?}, self.{});", e.name, e.name);
        }
        for e in &h.argv {
            let _ = writeln!(out, "        out.arg({:?}, self.{});", e.name, e.name);
        }
        out.push_str("    }\n}\n\n");
    }
    let acknowledged: Vec<String> = headers
        .iter()
        .filter(|h| h.acknowledged)
        .map(|h| format!("{:?}", h.file))
        .collect();
    let _ = writeln!(
        out,
        "/// The scripts whose header says `acknowledged:`: their writes must be on \
         `REDIS_WAIT_REPLICAS` replicas before their answer is given.\n\
         pub(crate) const ACKNOWLEDGED: &[&str] = &[{}];\n",
        acknowledged.join(", ")
    );
    let users: Vec<String> = headers
        .iter()
        .map(|h| {
            let names: Vec<String> = h.users.iter().map(|u| format!("{u:?}")).collect();
            format!("({:?}, &[{}])", h.file, names.join(", "))
        })
        .collect();
    let _ = writeln!(
        out,
        "/// Each script with the Redis users its header names (`redis users:`).\n\
         pub(crate) const REDIS_USERS: &[(&str, &[&str])] = &[{}];\n",
        users.join(", ")
    );
    let all: Vec<String> = headers
        .iter()
        .map(|h| format!("&{}", h.static_name()))
        .collect();
    let _ = writeln!(
        out,
        "/// Every script that has a header with keys.\n\
         static ALL: &[&LazyLock<Lua>] = &[{}];",
        all.join(", ")
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "-- t.lua: reads a meta hash.\n-- helpers: records.lua\n-- redis users: app\n\
        -- KEYS[1] meta: m\n-- KEYS[2] shares: s,\n--   continued\n-- ARGV[1] count (u32): n\n\
        return redis.call('GET', KEYS[1]) .. KEYS[2] .. ARGV[1]\n";

    fn header(text: &str) -> Result<Option<Header>, String> {
        parse("t.lua", text, &["records.lua", "journal.lua"])
    }

    #[test]
    fn a_header_declares_names_types_docs_and_helpers() {
        let h = header(TEXT).unwrap().unwrap();
        let fields: Vec<(&str, &str)> = h
            .keys
            .iter()
            .chain(&h.argv)
            .map(|e| (e.name.as_str(), e.ty.as_str()))
            .collect();
        assert_eq!(
            fields,
            [("meta", "&str"), ("shares", "&str"), ("count", "u32")]
        );
        assert_eq!(h.keys[1].doc, "s, continued");
        assert_eq!(
            (h.summary.as_str(), h.helpers.as_slice()),
            ("reads a meta hash.", &["records.lua".to_string()][..])
        );
        assert_eq!(
            (h.static_name(), h.call_name()),
            ("T".into(), "TCall".into())
        );
    }

    #[test]
    fn a_file_without_keys_is_a_helper() {
        assert_eq!(header("-- records.lua: helpers\nlocal x = 1\n"), Ok(None));
    }

    #[test]
    fn a_body_reading_a_key_the_header_does_not_list_is_refused() {
        let more = TEXT.replace("KEYS[2] ..", "KEYS[3] ..");
        assert!(header(&more).unwrap_err().contains("reads up to KEYS[3]"));
    }

    #[test]
    fn an_index_out_of_place_is_refused() {
        let gap = TEXT.replace("KEYS[2] shares", "KEYS[3] shares");
        assert!(header(&gap).unwrap_err().contains("expected index 2"));
    }

    #[test]
    fn a_variable_part_must_be_a_slice() {
        let bad = TEXT
            .replace("KEYS[2] shares", "KEYS[2..] shares")
            .replace("KEYS[2] ..", "KEYS[#KEYS] ..");
        assert!(header(&bad).unwrap_err().contains("slice type"));
        let good = bad.replace("shares:", "shares (&[String]):");
        assert!(header(&good).is_ok());
    }

    #[test]
    fn a_script_no_redis_user_runs_is_refused() {
        let bad = TEXT.replace("-- redis users: app\n", "");
        assert!(header(&bad).unwrap_err().contains("redis users"));
        assert_eq!(header(TEXT).unwrap().unwrap().users, ["app"]);
    }

    #[test]
    fn an_unknown_helper_is_refused() {
        let bad = TEXT.replace("helpers: records.lua", "helpers: nope.lua");
        assert!(header(&bad).unwrap_err().contains("nope.lua"));
    }

    #[test]
    fn a_journaling_script_must_be_acknowledged() {
        let journals = TEXT
            .replace("helpers: records.lua", "helpers: records.lua journal.lua")
            .replace("return", "journal_add(1)\nreturn");
        assert!(header(&journals).unwrap_err().contains("acknowledged"));
        let said = journals.replace("-- KEYS[1]", "-- acknowledged: WAIT\n-- KEYS[1]");
        assert!(header(&said).unwrap().unwrap().acknowledged);
    }

    #[test]
    fn docs_show_brackets_and_tags_as_written() {
        assert_eq!(
            doc_text("KEYS[1] <id> `a[1]`"),
            "KEYS\\[1\\] \\<id\\> `a[1]`"
        );
    }

    #[test]
    fn the_rust_of_a_script_declares_its_static_call_and_lists() {
        let rust = rust(&[header(TEXT).unwrap().unwrap()]);
        assert!(rust.contains("pub static T: LazyLock<Lua>"));
        assert!(rust.contains("pub struct TCall<'a> {"));
        assert!(rust.contains("pub count: u32,"));
        assert!(rust.contains("out.key(\"shares\", self.shares);"));
        assert!(rust.contains("static ALL: &[&LazyLock<Lua>] = &[&T];"));
    }
}
