//! The `merchant` Lambda function: merchant budgets and their orders' packets (the team's
//! backend, AWS_IAM).
//!
//! Thin by design, as the AWS Lambda Rust runtime's `http-axum` examples: build the settings,
//! the Redis store and the axum router once per sandbox, then serve every API Gateway HTTP API
//! event of its routes ([`Function::routes`], listed in `functions.json`) with it.

use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda::run_http(Function::Merchant).await
}
