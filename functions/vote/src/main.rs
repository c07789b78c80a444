//! The `vote` Lambda function: the article-voting site of "Redis in Action" chapter 1 —
//! POST /articles, GET /articles, POST /articles/{id}/vote, PUT /articles/{id}/groups,
//! GET /groups/{group}/articles.
//!
//! Thin by design: [`hongbao::lambda::run_http`] builds the configuration and the Redis store
//! once per sandbox, then hands every API Gateway HTTP API event to
//! [`hongbao::handlers::vote`].

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    hongbao::lambda::run_http(hongbao::handlers::vote).await
}
