//! The `grab` Lambda function: GET /packets/{id}, POST /packets/{id}/grab.
//!
//! Thin by design: build the configuration and the Redis store once per sandbox, then hand
//! every API Gateway HTTP API event to [`hongbao::handlers::grab`].

use hongbao::{Config, Store};
use lambda_http::{service_fn, Error, Request};

#[tokio::main]
async fn main() -> Result<(), Error> {
    hongbao::init_tracing();
    let store: &'static Store = Box::leak(Box::new(Store::new(Config::from_env()?)));
    lambda_http::run(service_fn(move |req: Request| async move {
        Ok::<_, Error>(hongbao::handlers::grab(store, req).await)
    }))
    .await
}
