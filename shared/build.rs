//! Prepares the Lua scripts of `lua/` for embedding: every whole-line comment is blanked
//! (the line kept, empty), so a binary carries each script's code, not its documentation
//! (about 60 % of the files' bytes). Line numbers stay those of `lua/<file>`, so Redis's
//! `user_script:<line>` in an error points at the right line of the file (past any helpers
//! prepended to it). Code lines are copied byte for byte, comments at their ends included.
//!
//! The output is `$OUT_DIR/lua/<file>`, read by `store::scripts` with `include_str!`.
//!
//! Every script's header is its one declaration (`shared/src/store/scripts/header.rs`): this
//! checks it against the script's body and writes `$OUT_DIR/scripts.rs`, each script's static
//! and typed call, included by `store::scripts`. A header that does not match its body fails
//! the build with the script's file and the mismatch.
//! A long bracket (`[[`, `[=[`, `--[[`) is refused: a line inside it may start with `--`
//! without being a comment, and this line-based pass cannot tell.

use std::{env, fs, path::Path};

#[path = "src/store/scripts/header.rs"]
mod header;

fn main() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lua");
    fs::create_dir_all(&out).expect("create $OUT_DIR/lua");
    println!("cargo::rerun-if-changed={}", source.display());
    let mut files = Vec::new();
    for entry in fs::read_dir(&source).expect("read lua/") {
        let path = entry.expect("read lua/").path();
        if path.extension().is_none_or(|e| e != "lua") {
            continue;
        }
        println!("cargo::rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).expect("read a script");
        let name = path.file_name().expect("a file name");
        fs::write(out.join(name), code_only(&text, &path)).expect("write a script");
        files.push((name.to_string_lossy().into_owned(), text));
    }
    files.sort();
    // A helper is a file whose header declares no keys.
    let helpers: Vec<&str> = files
        .iter()
        .filter(|(_, text)| {
            !text
                .lines()
                .take_while(|l| l.starts_with("--"))
                .any(|l| l.starts_with("-- KEYS["))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    let headers: Vec<header::Header> = files
        .iter()
        .filter_map(|(name, text)| {
            header::parse(name, text, &helpers).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let rust = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("scripts.rs");
    fs::write(rust, header::rust(&headers)).expect("write scripts.rs");
}

/// `text` with each line whose first non-blank characters are `--` emptied (its newline
/// kept); every other line unchanged.
fn code_only(text: &str, path: &Path) -> String {
    if text.contains("[[") || text.contains("[=") {
        panic!(
            "{}: a Lua long bracket; build.rs blanks comment lines and cannot tell one inside it",
            path.display()
        );
    }
    text.split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with("--") {
                if line.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                line
            }
        })
        .collect()
}
