//! Prepares the Lua scripts of `lua/` for embedding: every whole-line comment is blanked
//! (the line kept, empty), so a binary carries each script's code, not its documentation
//! (about 60 % of the files' bytes). Line numbers stay those of `lua/<file>`, so Redis's
//! `user_script:<line>` in an error points at the right line of the file (past any helpers
//! prepended to it). Code lines are copied byte for byte, comments at their ends included.
//!
//! The output is `$OUT_DIR/lua/<file>`, read by `store::scripts` with `include_str!`.
//! A long bracket (`[[`, `[=[`, `--[[`) is refused: a line inside it may start with `--`
//! without being a comment, and this line-based pass cannot tell.

use std::{env, fs, path::Path};

fn main() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lua");
    let out = Path::new(&env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("lua");
    fs::create_dir_all(&out).expect("create $OUT_DIR/lua");
    println!("cargo::rerun-if-changed={}", source.display());
    for entry in fs::read_dir(&source).expect("read lua/") {
        let path = entry.expect("read lua/").path();
        if path.extension().is_none_or(|e| e != "lua") {
            continue;
        }
        println!("cargo::rerun-if-changed={}", path.display());
        let text = fs::read_to_string(&path).expect("read a script");
        let name = path.file_name().expect("a file name");
        fs::write(out.join(name), code_only(&text, &path)).expect("write a script");
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
