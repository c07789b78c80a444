//! The `claim` Lambda function: POST /packets/{id}/claim.
//!
//! Thin by design, as the AWS Lambda Rust runtime's `http-axum` examples: build the settings,
//! the Redis store and the axum router once per sandbox, then serve every API Gateway HTTP API
//! event with it.

use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda::run_http(Function::Claim).await
}
