//! The Redis password from Secrets Manager (`hongbao::lambda::secrets`, what Init reads for
//! `REDIS_PASSWORD_SECRET_ARN`), against moto's Secrets Manager and a real ACL user.

use std::sync::Arc;

use aws_sdk_secretsmanager::Client;
use harness::moto::MotoServer;
use harness::ConfiguredServer;
use hongbao::lambda::secrets::read_password;
use hongbao::store::redis_auth::{AuthKind, RedisAuth};
use hongbao::{Config, Store};

/// moto with secret `name` holding `value`, and a client of it.
async fn moto_with_secret(name: &str, value: &str) -> (MotoServer, Client) {
    let moto = MotoServer::start();
    let client = Client::new(&moto.sdk_config());
    client
        .create_secret()
        .name(name)
        .secret_string(value)
        .send()
        .await
        .expect("moto creates the secret");
    (moto, client)
}

#[tokio::test]
async fn the_password_read_from_its_secret_opens_the_acl_user() {
    let (_moto, client) = moto_with_secret("hongbao/redis", "correct-horse").await;
    let server = ConfiguredServer::acl("hongbao-app", "correct-horse", &[]);

    let password = read_password(&client, "hongbao/redis").await.unwrap();
    let store = Arc::new(Store::new(Config {
        redis_url: server.url(),
        redis_auth: RedisAuth {
            kind: AuthKind::Password,
            username: Some("hongbao-app".into()),
            password: Some(password),
            ..RedisAuth::default()
        },
        ..Config::default()
    }));

    store
        .connect_at_cold_start()
        .await
        .expect("the secret's password opens the user");
}

#[tokio::test]
async fn a_missing_secret_names_the_variable_and_the_secret() {
    let (_moto, client) = moto_with_secret("hongbao/redis", "correct-horse").await;

    let e = read_password(&client, "hongbao/other")
        .await
        .unwrap_err()
        .to_string();

    assert!(
        e.starts_with("REDIS_PASSWORD_SECRET_ARN=hongbao/other: "),
        "{e}"
    );
    assert!(!e.contains("correct-horse"), "{e}");
}
