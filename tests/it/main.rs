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
//! No thread cap: libtest runs the tests in name order on one thread per core, so a suite's
//! tests overlap mostly with each other, as when each suite was its own binary, and only the
//! last tests of one suite with the first of the next. On 2 cores every suite, the
//! cluster-starting ones (`discovery`, `failover`, `faults`, and `make replicas`' 3-master +
//! 3-replica clusters) included, passes well within its timeouts that way. Where one does not,
//! cap the run (`-- --test-threads=1`) rather than the harness.

mod common;

mod connect;
mod discovery;
mod durability;
mod failover;
mod faults;
mod handlers;
mod harness_smoke;
mod history;
mod iam_token;
mod order_codes;
mod red_packets;
mod voting;
mod workload;
