//! The `create-packet` Lambda function: POST /packets.
//!
//! Thin by design: [`hongbao::lambda::run_http`] builds the configuration and the Redis store
//! once per sandbox, then hands every API Gateway HTTP API event to
//! [`hongbao::handlers::create_packet`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    hongbao::lambda::run_http(hongbao::handlers::create_packet).await
}
