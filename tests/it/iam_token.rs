//! The IAM auth token (`REDIS_AUTH=iam`) compared byte for byte with the one botocore makes
//! (`RequestSigner.generate_presigned_url`, frozen clock) for the same credentials, region,
//! name, user and signing time: ElastiCache node-based and serverless, and MemoryDB.
//!
//! botocore comes from the project's `.venv` (`scripts/install-deps.sh` installs aws-sam-cli,
//! which depends on it); if it is missing the test runs that installer. When that is impossible
//! the test fails: a comparison that was not made is not a pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use hongbao::store::redis_auth::{iam_auth_token, IamTarget};

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

/// The project's Python with botocore (`.venv`, which `scripts/install-deps.sh`, the one
/// installer, fills from `scripts/requirements.txt`: aws-sam-cli depends on botocore); runs the
/// installer when it is missing. `Err(reason)` when that is impossible.
fn python_with_botocore() -> Result<PathBuf, String> {
    let venv = root().join(".venv/bin/python");
    if venv.exists() && has_botocore(&venv) {
        return Ok(venv);
    }
    let installed = Command::new("bash")
        .arg(root().join("scripts/install-deps.sh"))
        .current_dir(root())
        .status()
        .map_err(|e| format!("cannot run scripts/install-deps.sh: {e}"))?;
    if installed.success() && has_botocore(&venv) {
        Ok(venv)
    } else {
        Err("scripts/install-deps.sh did not provide botocore in .venv".into())
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
    target: IamTarget,
    at: u64,
) -> String {
    let out = Command::new(python)
        .env("BOTO_DISABLE_CRT", if crt { "false" } else { "true" })
        .arg(root().join("tests/support/iam_token.py"))
        .args([
            c.access_key_id(),
            c.secret_access_key(),
            c.session_token().unwrap_or(""),
            region,
            cache,
            user,
            match target {
                IamTarget::ElastiCache => "elasticache",
                IamTarget::ElastiCacheServerless => "elasticache-serverless",
                IamTarget::MemoryDb => "memorydb",
            },
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
    let python = python_with_botocore()
        .unwrap_or_else(|why| panic!("botocore is needed for this comparison: {why}"));
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
            IamTarget::ElastiCache,
        ),
        (
            &with_session,
            "ap-southeast-1",
            "hongbao-serverless",
            "hongbao-app",
            IamTarget::ElastiCacheServerless,
        ),
        (
            &long_term,
            "eu-west-1",
            "my-replication-group",
            "iam-user_01",
            IamTarget::ElastiCache,
        ),
        (
            &long_term,
            "eu-west-1",
            "my-serverless-cache",
            "iam-user_01",
            IamTarget::ElastiCacheServerless,
        ),
        (
            &with_session,
            "us-east-1",
            "hongbao-memorydb",
            "hongbao-app",
            IamTarget::MemoryDb,
        ),
        (
            &long_term,
            "ap-northeast-1",
            "payments-cluster",
            "iam-user_01",
            IamTarget::MemoryDb,
        ),
    ];
    for (creds, region, cache, user, target) in cases {
        let ours = iam_auth_token(creds, region, cache, user, target, time).unwrap();
        let theirs = botocore_token(&python, false, creds, region, cache, user, target, at);
        assert_eq!(ours, theirs, "{region} {cache} {user} {target:?}");
        // With awscrt installed (aws-sam-cli brings it), botocore signs through the CRT, which
        // orders X-Amz-SignedHeaders before X-Amz-Expires: same parameters, same signature.
        let crt = botocore_token(&python, true, creds, region, cache, user, target, at);
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
        assert_eq!(
            ours.contains("ResourceType=ServerlessCache"),
            target == IamTarget::ElastiCacheServerless
        );
        assert!(ours.contains(&format!(
            "%2F{region}%2F{}%2Faws4_request",
            target.service()
        )));
        assert!(ours.contains("X-Amz-Expires=900"));
    }
}
