//! The integration tests, one binary: a module per suite, each against its own real
//! `redis-server` (or Valkey) processes started by the `harness` crate. One binary is linked
//! once per build instead of once per suite; a suite is selected by its module path:
//!
//! ```sh
//! cargo test -p hongbao-tests --test it                      # every suite
//! cargo test -p hongbao-tests --test it -- red_packets:: voting::
//! ```
//!
//! The suites share one process, so they share its state. The rules that keep them
//! independent:
//!
//! * No test changes the process environment (`std::env::set_var`): the environment is read
//!   only, for the harness's switches that `make` sets before the run (`HONGBAO_TEST_SERVER`,
//!   `HONGBAO_TEST_CLUSTER_REPLICAS`); a test that needs other settings passes them to
//!   [`hongbao::Config::from_lookup`] or builds its [`hongbao::Config`] directly.
//! * Every server is a child process owned by the value that started it and killed when that
//!   value drops (a panicking test included); signals (`SIGSTOP`, `SIGCONT`) go to those
//!   children's pids only, never to this process.
//! * Ports come from `harness::ports::free_port`, which never hands the same port out twice in
//!   one process, whatever the suite.
//! * No test installs a global tracing subscriber or metrics recorder.
//! * Caches inside `hongbao` that outlive a test (the order-code day secrets) are keyed by the
//!   server's URL, and no two servers of the process share a URL.
//!
//! More threads than cores: the tests mostly wait (servers starting, clusters converging,
//! TTLs running out, failovers, `SIGSTOP`ped nodes), not compute. On 2 cores, at libtest's
//! default of one thread per core, this binary took 165 s and used 20 % of the CPU; `make`
//! runs it with `RUST_TEST_THREADS=12` (`TEST_THREADS`), 45-56 s with every test passing, also
//! while a release build ran beside it. libtest starts the tests in name order, so a suite's
//! tests overlap mostly with each other and with the next suite's first ones. The longest test
//! (`workload::seeded_random_workload_conserves_money`, 18 s) bounds how far more threads
//! help. Each test's timeouts are the harness's (`RESPONSE_TIMEOUT`, cluster convergence), far
//! above what a loaded 2-core run takes; where one is not, lower `TEST_THREADS` rather than
//! raise the timeout.

mod common;

mod acl;
mod chat_packets;
mod connect;
mod coupons;
mod discovery;
mod draws;
mod durability;
mod failover;
mod faults;
mod handlers;
mod harness_proxy;
mod harness_smoke;
mod history;
mod iam_token;
mod journal;
mod merchant_packets;
mod merchants;
mod order_codes;
mod red_packets;
mod replays;
mod request_contract;
mod rerun;
mod resend;
mod secrets;
mod soak;
mod support;
mod tenants;
mod voting;
mod withdrawals;
mod workload;
