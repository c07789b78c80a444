//! Prepares the Lua scripts (`lua/` and every `*.lua` beside its operation under `src/`) for
//! embedding: every whole-line comment is blanked
//! (the line kept, empty), so a binary carries each script's code, not its documentation
//! (about 60 % of the files' bytes). Line numbers stay those of the file, so Redis's
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
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = crate_dir.parent().expect("shared/ is in the repository");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lua");
    fs::create_dir_all(&out).expect("create $OUT_DIR/lua");
    // The helpers and the shared scripts in lua/, then every script beside its operation.
    let mut paths = Vec::new();
    lua_files(&root.join("lua"), &mut paths);
    lua_files(&crate_dir.join("src"), &mut paths);
    let mut files: Vec<(String, String, String)> = Vec::new();
    for path in paths {
        println!("cargo::rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).expect("read a script");
        let name = path
            .file_name()
            .expect("a file name")
            .to_string_lossy()
            .into_owned();
        let from_root = path
            .strip_prefix(root)
            .expect("a script of the repository")
            .to_string_lossy()
            .replace('\\', "/");
        if let Some((_, other, _)) = files.iter().find(|(n, _, _)| *n == name) {
            panic!("{from_root}: the file name of {other}; a script's file name is unique");
        }
        fs::write(out.join(&name), code_only(&text, &path)).expect("write a script");
        files.push((name, from_root, text));
    }
    files.sort();
    // A helper is a file whose header declares no keys.
    let helpers: Vec<&str> = files
        .iter()
        .filter(|(_, _, text)| {
            !text
                .lines()
                .take_while(|l| l.starts_with("--"))
                .any(|l| l.starts_with("-- KEYS["))
        })
        .map(|(name, _, _)| name.as_str())
        .collect();
    let headers: Vec<header::Header> = files
        .iter()
        .filter_map(|(_, path, text)| {
            header::parse(path, text, &helpers).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let rust = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("scripts.rs");
    fs::write(rust, header::rust(&headers)).expect("write scripts.rs");
}

/// Every `*.lua` file under `dir` (recursively) into `found`; each directory visited is
/// watched, so a script added to it reruns this.
fn lua_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    println!("cargo::rerun-if-changed={}", dir.display());
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("read a directory").path();
        if path.is_dir() {
            lua_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "lua") {
            found.push(path);
        }
    }
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
