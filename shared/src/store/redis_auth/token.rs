//! The IAM auth token of an ElastiCache or MemoryDB connection: a SigV4 query-string presign
//! of `GET http://<cache or cluster name>/?Action=connect&User=<user id>` (plus
//! `&ResourceType=ServerlessCache` for an ElastiCache serverless cache), service
//! `elasticache` or `memorydb`, 900 s expiry, without the `http://` prefix. Sources: the
//! ElastiCache and MemoryDB developer guides, "Authenticating with IAM" (their
//! `IAMAuthTokenRequest` examples), and botocore's `RequestSigner.generate_presigned_url`,
//! whose token this one equals byte for byte (`tests/it/iam_token.rs` checks it against
//! botocore itself).

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::IamTarget;
use crate::store::error::Error;

/// An IAM token's validity (the presign's `X-Amz-Expires`): ElastiCache's fixed 15 minutes.
pub const TOKEN_EXPIRY: Duration = Duration::from_secs(900);

/// What RFC 3986 leaves unreserved, `A-Z a-z 0-9 - _ . ~`: SigV4 (and botocore's
/// `percent_encode`) percent-encode every other byte.
const SIGV4_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `s` percent-encoded as SigV4 query strings are (uppercase hex, [`SIGV4_UNRESERVED`] kept).
fn uri_encode(s: &str) -> String {
    utf8_percent_encode(s, SIGV4_UNRESERVED).to_string()
}

/// The IAM auth token for `user_id` on `cache_name` (an ElastiCache cache or a MemoryDB
/// cluster, as `target` says), signed at `time`.
///
/// A SigV4 query-string presign (service [`IamTarget::service`], `region`, 900 s) of
/// `GET http://<cache_name>/?Action=connect&User=<user_id>` (plus
/// `&ResourceType=ServerlessCache` for [`IamTarget::ElastiCacheServerless`]), without the
/// `http://` prefix. The
/// parameters are in botocore's order (the request's, then `X-Amz-Algorithm`, `-Credential`,
/// `-Date`, `-Expires`, `-SignedHeaders`, `-Security-Token`, `-Signature`), so the token is
/// byte for byte the one `botocore.signers.RequestSigner.generate_presigned_url` makes.
///
/// # Errors
/// [`Error::Unavailable`] if signing fails (it only can for malformed input).
pub fn iam_auth_token(
    credentials: &Credentials,
    region: &str,
    cache_name: &str,
    user_id: &str,
    target: IamTarget,
    time: SystemTime,
) -> Result<String, Error> {
    use aws_sigv4::http_request::{
        sign, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
    };
    use aws_sigv4::sign::v4;

    let mut query = format!("Action=connect&User={}", uri_encode(user_id));
    if let Some(resource_type) = target.resource_type() {
        query.push_str("&ResourceType=");
        query.push_str(resource_type);
    }
    let url = format!("http://{cache_name}/?{query}");
    let identity = credentials.clone().into();
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(TOKEN_EXPIRY);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(target.service())
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| Error::Unavailable(format!("IAM token: bad signing parameters: {e}")))?
        .into();
    let request = SignableRequest::new("GET", &url, std::iter::empty(), SignableBody::Bytes(&[]))
        .map_err(|e| {
        Error::Unavailable(format!(
            "IAM token: bad request for cache {cache_name:?}: {e}"
        ))
    })?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| Error::Unavailable(format!("IAM token: signing failed: {e}")))?
        .into_parts();
    let (_headers, mut signed) = instructions.into_parts();
    // botocore puts the signature last, after the security token.
    signed.sort_by_key(|(name, _)| *name == "X-Amz-Signature");
    let mut token = format!("{cache_name}/?{query}");
    for (name, value) in signed {
        token.push('&');
        token.push_str(name);
        token.push('=');
        token.push_str(&uri_encode(&value));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreserved_bytes_stay_as_they_are() {
        assert_eq!(uri_encode("AZaz09-_.~"), "AZaz09-_.~");
        assert_eq!(uri_encode("a/b+c= d:é"), "a%2Fb%2Bc%3D%20d%3A%C3%A9");
    }

    #[test]
    fn token_shape() {
        let creds = Credentials::new(
            "AKIDEXAMPLE",
            "secret",
            Some("tok/en+=".into()),
            None,
            "test",
        );
        let t = iam_auth_token(
            &creds,
            "us-east-1",
            "my-cache",
            "app-user",
            IamTarget::ElastiCacheServerless,
            SystemTime::UNIX_EPOCH,
        )
        .unwrap();
        assert!(t.starts_with("my-cache/?Action=connect&User=app-user&ResourceType=ServerlessCache&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F19700101%2Fus-east-1%2Felasticache%2Faws4_request&X-Amz-Date=19700101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=tok%2Fen%2B%3D&X-Amz-Signature="), "{t}");
    }
}
