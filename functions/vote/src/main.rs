//! The `vote` Lambda function: the article-voting site of "Redis in Action" chapter 1
//! (POST /articles, GET /articles, POST /articles/{id}/vote, PUT /articles/{id}/groups,
//! GET /groups/{group}/articles).
//!
//! Thin by design, as the AWS Lambda Rust runtime's `http-axum` examples: build the settings,
//! the Redis store and the axum router once per sandbox, then serve every API Gateway HTTP API
//! event with it.

use hongbao::lambda::{self, Function};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda::run_http(Function::Vote).await
}
