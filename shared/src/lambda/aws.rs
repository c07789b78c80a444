//! The AWS SDK's configuration in a Lambda sandbox, shared by its clients (EventBridge for
//! ledger-export, Secrets Manager at Init).

/// The SDK configuration a Lambda sandbox gives an AWS client: the region from `AWS_REGION`,
/// the credentials Lambda puts in the environment, `AWS_ENDPOINT_URL` (or a service's own
/// `AWS_ENDPOINT_URL_<SERVICE>`) when set (a local endpoint such as moto's); HTTPS on hyper 1
/// and rustls with `ring`, the provider the Redis client's TLS uses (two providers in one
/// process leave rustls without a default, and Redis's TLS connect would panic).
pub async fn sdk_config() -> aws_config::SdkConfig {
    use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        )
        .http_client(http)
        .load()
        .await
}
