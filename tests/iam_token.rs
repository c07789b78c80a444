//! The ElastiCache IAM auth token (`REDIS_AUTH=iam`) compared byte for byte with the one
//! botocore makes (`RequestSigner.generate_presigned_url`, frozen clock) for the same
//! credentials, region, cache, user and signing time, node-based and serverless.
//!
//! botocore comes from the project's `.venv` (`scripts/install-deps.sh` installs aws-sam-cli,
//! which depends on it); if it is missing there the test installs it with pip (into `.venv`, or
//! a venv under `target/` when there is no `.venv`) and only skips, saying why, when pip
//! cannot.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use hongbao::auth::iam_auth_token;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn has_botocore(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import botocore"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A Python with botocore, installing it if needed; `Err(reason)` when that is impossible.
fn python_with_botocore() -> Result<PathBuf, String> {
    let venv = root().join(".venv/bin/python");
    if venv.exists() && has_botocore(&venv) {
        return Ok(venv);
    }
    let python = if venv.exists() {
        venv
    } else {
        let dir = root().join("target/botocore-venv");
        let python = dir.join("bin/python");
        if !python.exists() {
            let ok = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err("no .venv and `python3 -m venv` failed".into());
            }
        }
        python
    };
    if has_botocore(&python) {
        return Ok(python);
    }
    let pip = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "botocore"])
        .status()
        .map_err(|e| format!("cannot run pip: {e}"))?;
    if pip.success() && has_botocore(&python) {
        Ok(python)
    } else {
        Err(format!(
            "`{} -m pip install botocore` failed",
            python.display()
        ))
    }
}

/// botocore's token; `crt`: through awscrt's signer (when installed) instead of botocore's
/// pure-Python one.
#[allow(clippy::too_many_arguments)]
fn botocore_token(
    python: &Path,
    crt: bool,
    c: &Credentials,
    region: &str,
    cache: &str,
    user: &str,
    serverless: bool,
    at: u64,
) -> String {
    let out = Command::new(python)
        .env("BOTO_DISABLE_CRT", if crt { "false" } else { "true" })
        .arg(root().join("tests/support/elasticache_token.py"))
        .args([
            c.access_key_id(),
            c.secret_access_key(),
            c.session_token().unwrap_or(""),
            region,
            cache,
            user,
            if serverless { "1" } else { "0" },
            &at.to_string(),
        ])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "botocore script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn token_matches_botocore_byte_for_byte() {
    let python = match python_with_botocore() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("SKIPPED token_matches_botocore_byte_for_byte: botocore unavailable: {why}");
            return;
        }
    };
    let at: u64 = 1_767_225_600 + 3_723; // 2026-01-01T01:02:03Z
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(at);
    let with_session = Credentials::new(
        "ASIAEXAMPLEKEY123456",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        Some("IQoJb3JpZ2luX2VjEXAMPLE//////////wEaCXVzLWVhc3QtMSJHMEUCIQD+token=".into()),
        None,
        "test",
    );
    let long_term = Credentials::new(
        "AKIAEXAMPLEKEY123456",
        "secret/with+chars=",
        None,
        None,
        "test",
    );
    let cases = [
        (
            &with_session,
            "us-east-1",
            "hongbao-cache",
            "hongbao-app",
            false,
        ),
        (
            &with_session,
            "ap-southeast-1",
            "hongbao-serverless",
            "hongbao-app",
            true,
        ),
        (
            &long_term,
            "eu-west-1",
            "my-replication-group",
            "iam-user_01",
            false,
        ),
        (
            &long_term,
            "eu-west-1",
            "my-serverless-cache",
            "iam-user_01",
            true,
        ),
    ];
    for (creds, region, cache, user, serverless) in cases {
        let ours = iam_auth_token(creds, region, cache, user, serverless, time).unwrap();
        let theirs = botocore_token(&python, false, creds, region, cache, user, serverless, at);
        assert_eq!(
            ours, theirs,
            "{region} {cache} {user} serverless={serverless}"
        );
        // With awscrt installed (aws-sam-cli brings it), botocore signs through the CRT, which
        // orders X-Amz-SignedHeaders before X-Amz-Expires: same parameters, same signature.
        let crt = botocore_token(&python, true, creds, region, cache, user, serverless, at);
        let sorted = |t: &str| {
            let mut p: Vec<String> = t
                .split_once('?')
                .unwrap()
                .1
                .split('&')
                .map(String::from)
                .collect();
            p.sort();
            p
        };
        assert_eq!(sorted(&ours), sorted(&crt), "CRT: {crt}");
        assert!(ours.starts_with(&format!("{cache}/?Action=connect&User={user}")));
        assert_eq!(ours.contains("ResourceType=ServerlessCache"), serverless);
        assert!(ours.contains("X-Amz-Expires=900"));
    }
}
