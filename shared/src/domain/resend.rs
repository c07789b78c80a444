//! The re-send horizon: how long after its first run a call can still arrive again, and so how
//! long every record a re-run reads is kept (the settings that set those times are refused
//! below it).

/// AWS Lambda's maximum function timeout, s (15 minutes): no invocation runs longer, whatever
/// timeout the template gives the claim function or reclaim-cron.
pub const LAMBDA_MAX_TIMEOUT_SECS: u64 = 900;

/// Difference allowed between the clocks of the Redis nodes that set and check a record's
/// "forget after" time (a failover moves a wallet's slot to another node), s.
pub const NODE_CLOCK_MARGIN_SECS: u64 = 60;

/// The re-send horizon, s: how long after a call's first run the same call (its id) can still
/// arrive. A call is sent, and re-sent by the Redis client when its reply is lost (within
/// twice the response timeout, `store::connect`), only by the Lambda invocation that made it,
/// which ends within [`LAMBDA_MAX_TIMEOUT_SECS`] whatever timeout the template gives it;
/// [`NODE_CLOCK_MARGIN_SECS`] more covers the clocks of the nodes that write and expire a
/// record. Every record a re-run reads (a call's answer, a deposit's or withdrawal's reference,
/// a done claim's credit record) is kept at least this long: the settings that set how long
/// are refused below it.
pub const RESEND_HORIZON_SECS: u64 = LAMBDA_MAX_TIMEOUT_SECS + NODE_CLOCK_MARGIN_SECS;

/// How long a call's answer is kept under its call id, ms (`lua/records.lua`:
/// call_answer_add): the re-send horizon, derived, not a setting. Nothing later reads it: a call
/// re-sent after its first run arrives within [`RESEND_HORIZON_SECS`].
pub const CALL_KEEP_MS: u64 = RESEND_HORIZON_SECS * 1000;
