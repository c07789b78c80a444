//! The `wallet` Lambda function: GET /wallet, POST /wallet/deposits.
//!
//! Thin by design: [`hongbao::lambda::run_http`] builds the configuration and the Redis store
//! once per sandbox, then hands every API Gateway HTTP API event to
//! [`hongbao::handlers::wallet`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    hongbao::lambda::run_http(hongbao::handlers::wallet).await
}
