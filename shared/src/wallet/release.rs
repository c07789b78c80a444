//! Claim step 4 on the grabber's slot: the claim credit's record un-pinned
//! (`lua/transfer_release.lua`).

use crate::store::keys::Keys;
use crate::store::scripts::Call;
use crate::store::scripts::TransferReleaseCall;
use crate::store::{Error, Store};
use crate::wallet::rules::claim_transfer_id;

/// Claim step 4, on `user_id`'s slot: once the claim of `packet_id` is marked done, un-pin its
/// credit record so it is forgotten after [`crate::packets::rules::PacketRules::claim_record_keep_ms`]
/// (`lua/transfer_release.lua`; idempotent). Returns the balance, cents.
///
/// # Errors
/// [`Error::Unavailable`] when Redis cannot be reached (the record stays pinned: it costs a few
/// bytes, never money; the next claim call for this packet un-pins it).
pub async fn release_claim_record(
    store: &Store,
    user_id: &str,
    packet_id: &str,
) -> Result<i64, Error> {
    let wk = Keys::new(&store.config().key_prefix).wallet(user_id);
    let mut conn = store.conn().await?;
    Ok(TransferReleaseCall {
        wallet: &wk.wallet,
        records_forget: &wk.records_forget,
        record_id: &claim_transfer_id(packet_id),
        keep_ms: store.config().packets.claim_record_keep_ms(),
    }
    .invocation()
    .invoke_async(&mut conn)
    .await?)
}
