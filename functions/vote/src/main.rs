//! The `vote` Lambda function: the article-voting site of "Redis in Action" chapter 1 —
//! POST /articles, GET /articles, POST /articles/{id}/vote, PUT /articles/{id}/groups,
//! GET /groups/{group}/articles.
//!
//! Thin by design: build the configuration and the Redis store once per sandbox, then hand
//! every API Gateway HTTP API event to [`hongbao::handlers::vote`].

use hongbao::{Config, Store};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hongbao::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(hongbao::handlers::vote(store, req).await)
    }))
    .await
}
