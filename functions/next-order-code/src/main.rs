//! The `next-order-code` Lambda function: POST /order-codes.
//!
//! Thin by design: build the configuration and the Redis store once per sandbox, then hand
//! every API Gateway HTTP API event to [`hongbao::handlers::next_order_code`].

use hongbao::{Config, Store};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hongbao::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(hongbao::handlers::next_order_code(store, req).await)
    }))
    .await
}
