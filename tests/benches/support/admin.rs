//! The admin side of a bench that drives hongbao on its own tokio runtime: the runtime, and the
//! admin store's commands (setup and statistics, never measured) run to completion on it.

use hongbao::Store;
use tokio::runtime::Runtime;

/// A multi-thread tokio runtime: one worker per core, or `BENCH_WORKERS` workers.
pub fn runtime() -> Runtime {
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(w) = std::env::var("BENCH_WORKERS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
    {
        rt.worker_threads(w);
    }
    rt.enable_all().build().expect("runtime")
}

/// Runs `cmd` (a Redis command as its words) on `admin`'s connection, on `rt`.
pub fn block_query<T: redis::FromRedisValue>(rt: &Runtime, admin: &Store, cmd: &[&str]) -> T {
    rt.block_on(async {
        let mut conn = admin.conn().await.expect("connect");
        redis::cmd(cmd[0])
            .arg(&cmd[1..])
            .query_async(&mut conn)
            .await
            .expect("admin query")
    })
}

/// `SCRIPT LOAD`s `script` through `admin`, on `rt`, and checks that the server's SHA-1 is the
/// script's (so that every measured call is one `EVALSHA`).
pub fn load_script(rt: &Runtime, admin: &Store, script: &redis::Script) {
    let sha = rt.block_on(async {
        let mut conn = admin.conn().await.expect("connect");
        script
            .prepare_invoke()
            .load_async(&mut conn)
            .await
            .expect("SCRIPT LOAD")
    });
    assert_eq!(sha, script.get_hash());
}
