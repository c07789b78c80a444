//! Checks every script's header (`-- KEYS[n] name: ...`, `-- ARGV[n] name: ...`) against its
//! call struct, and the indices its body reads against the header.

use std::collections::BTreeSet;

use redis::ToRedisArgs;

use super::*;

/// One `-- KEYS[index] name:` or `-- ARGV[index] name:` line of a header.
#[derive(Debug)]
struct Entry {
    index: String,
    name: String,
}

impl Entry {
    /// A variable number of values: an index range `a..b` or `a..`.
    fn repeated(&self) -> bool {
        self.index.contains("..")
    }
}

/// The leading comment block of a script.
fn header(text: &str) -> impl Iterator<Item = &str> {
    text.lines().take_while(|l| l.starts_with("--"))
}

/// The entries of `array` (`KEYS` or `ARGV`) in `text`'s header, in order.
fn entries(text: &str, array: &str) -> Result<Vec<Entry>, String> {
    let start = format!("-- {array}[");
    header(text)
        .filter_map(|l| l.strip_prefix(&start))
        .map(|rest| {
            let (index, rest) = rest
                .split_once("] ")
                .ok_or_else(|| format!("`{start}{rest}`: no `] `"))?;
            let (name, _) = rest
                .split_once(": ")
                .ok_or_else(|| format!("`{start}{index}] {rest}`: no `name: `"))?;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                return Err(format!(
                    "`{start}{index}] {rest}`: `{name}` is not a field name"
                ));
            }
            Ok(Entry {
                index: index.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

/// The literal indices `n` of `array[n]` in the script's body (after the header, comments
/// left out), and whether the body also reads a computed index (`array[i]`, `array[#KEYS + 2]`).
fn body_indices(text: &str, array: &str) -> (BTreeSet<usize>, bool) {
    let skip = header(text).count();
    let open = format!("{array}[");
    let (mut literal, mut computed) = (BTreeSet::new(), false);
    for line in text.lines().skip(skip) {
        let code = line.split("--").next().unwrap_or("");
        for (at, _) in code.match_indices(&open) {
            let rest = &code[at + open.len()..];
            let inner = rest.split(']').next().unwrap_or("");
            match inner.parse() {
                Ok(n) => {
                    literal.insert(n);
                }
                Err(_) => computed = true,
            }
        }
    }
    (literal, computed)
}

/// Records how many values each field of a call writes.
#[derive(Default)]
struct Counts {
    keys: Vec<(&'static str, usize)>,
    args: Vec<(&'static str, usize)>,
}

impl Sink for Counts {
    fn key<T: ToRedisArgs>(&mut self, name: &'static str, value: T) {
        self.keys.push((name, value.to_redis_args().len()));
    }
    fn arg<T: ToRedisArgs>(&mut self, name: &'static str, value: T) {
        self.args.push((name, value.to_redis_args().len()));
    }
}

/// Checks one array of one script: the header `entries` against the field `names` and the
/// `counts` a default call writes (a slice field writes none), and the body's indices.
fn check_array(
    text: &str,
    array: &str,
    names: &[&str],
    counts: &[(&'static str, usize)],
) -> Result<(), String> {
    let entries = entries(text, array)?;
    let header: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    if header != names {
        return Err(format!(
            "{array}: the header names {header:?}, the struct {names:?}"
        ));
    }
    let written: Vec<&str> = counts.iter().map(|(n, _)| *n).collect();
    if written != names {
        return Err(format!(
            "{array}: the struct writes {written:?}, declares {names:?}"
        ));
    }
    // Fixed entries before the first variable part: KEYS[1], KEYS[2], ...
    let mut fixed = 0;
    let mut after_repeated = false;
    for (i, (e, &(_, count))) in entries.iter().zip(counts).enumerate() {
        let position = (i + 1).to_string();
        let first = e.index.split("..").next().unwrap_or("");
        if e.repeated() != (count == 0) {
            return Err(format!(
                "{array}[{}] {}: the header says {}, the field writes {count} value(s) by default",
                e.index,
                e.name,
                if e.repeated() {
                    "a variable number"
                } else {
                    "one value"
                },
            ));
        }
        if !after_repeated && first != position {
            return Err(format!(
                "{array}[{}] {}: expected index {position}",
                e.index, e.name
            ));
        }
        if after_repeated && first.parse::<usize>().is_ok() {
            return Err(format!(
                "{array}[{}] {}: after a variable part an index is an expression",
                e.index, e.name
            ));
        }
        if e.repeated() {
            after_repeated = true;
        } else if !after_repeated {
            fixed += 1;
        }
    }
    let (literal, computed) = body_indices(text, array);
    let highest = literal.last().copied().unwrap_or(0);
    if highest != fixed {
        return Err(format!(
            "{array}: the header has {fixed} fixed entries, the body reads up to \
             {array}[{highest}] (literal indices {literal:?})"
        ));
    }
    if after_repeated && !computed {
        return Err(format!(
            "{array}: the header has a variable part, the body reads no computed index"
        ));
    }
    Ok(())
}

/// `lua/<file>` as written, comments and all (the embedded source has its comments blanked).
fn file_text(file: &str) -> String {
    let path = format!("{}/../lua/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Checks `C`'s script header against `C`; returns its script's file name.
fn check<C: Call + Default>() -> Result<&'static str, String> {
    let lua = C::lua();
    let mut counts = Counts::default();
    C::default().write(&mut counts);
    let text = file_text(lua.file());
    check_array(&text, "KEYS", C::KEYS, &counts.keys)
        .and_then(|()| check_array(&text, "ARGV", C::ARGV, &counts.args))
        .map_err(|e| format!("lua/{}: {e}", lua.file()))?;
    Ok(lua.file())
}

#[test]
fn every_script_header_matches_its_call() {
    let results = [
        check::<CreatePacketCall>(),
        check::<CancelCall>(),
        check::<DueAddCall>(),
        check::<GrabCall>(),
        check::<DrawEnterCall>(),
        check::<DrawRunCall>(),
        check::<ClaimCall>(),
        check::<ClaimDoneCall>(),
        check::<WalletCreditCall>(),
        check::<WithdrawCall>(),
        check::<MerchantDepositCall>(),
        check::<MerchantWithdrawCall>(),
        check::<MerchantCreatePacketCall>(),
        check::<JournalAckCall>(),
        check::<LedgerBaselineCall>(),
        check::<SettleCall>(),
        check::<TransferReleaseCall>(),
        check::<PacketViewCall>(),
        check::<HistoryPageCall>(),
        check::<UnlockCall>(),
        check::<ArticlePostCall>(),
        check::<VoteCall>(),
        check::<ArticleGroupsCall>(),
        check::<GroupPageCall>(),
        check::<OrderCodeCall>(),
        check::<CouponCreateCall>(),
        check::<CouponCreatePoolCall>(),
        check::<CouponGrabCall>(),
        check::<CouponHoldCall>(),
        check::<CouponRedeemCall>(),
        check::<CouponReleaseCall>(),
        check::<CouponTakeCall>(),
        check::<CouponSettleCall>(),
        check::<CouponAddCodesCall>(),
        check::<CouponBatchCall>(),
        check::<CouponClaimCall>(),
        check::<CouponUnclaimCall>(),
        check::<CouponCloseCall>(),
        check::<CouponDrawEnterCall>(),
        check::<CouponDrawRunCall>(),
    ];
    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let checked: BTreeSet<&str> = results.iter().filter_map(|r| r.clone().ok()).collect();
    let scripts: BTreeSet<&str> = all_lua().map(|(name, _)| name).collect();
    assert_eq!(checked, scripts, "every script has a call struct");
}

#[test]
fn a_call_writes_its_fields_in_order() {
    let shares = [5, 7];
    let call = CreatePacketCall {
        wallet: "w",
        history_totals: "h",
        packet_id: "p",
        count: 2,
        share_amounts: &shares,
        ..Default::default()
    };
    let (keys, args) = call.texts();
    assert_eq!((keys.len(), args.len()), (15, 32));
    assert_eq!((keys[0].as_str(), keys[11].as_str()), ("w", "h"));
    assert_eq!(&args[..1], ["p"]);
    assert_eq!(&args[3..4], ["2"]);
    assert_eq!(&args[30..], ["5", "7"]);
    let days = [(20_000, "s1"), (20_001, "")];
    let words = OrderCodeCall {
        day_hashes: &["d1".into(), "d2".into()],
        newest_day: "n",
        quotas: &["q1".into(), "q2".into()],
        days: &days,
        base_offset: 3600,
        transitions: &[(7, 0)],
        ..Default::default()
    }
    .evalsha_words();
    assert_eq!(words[1], ORDER_CODE.get_hash());
    assert_eq!(&words[2..8], ["5", "d1", "d2", "n", "q1", "q2"]);
    assert_eq!(&words[15..], ["20000", "s1", "20001", "", "3600", "7", "0"]);
}

#[test]
fn the_header_check_fails_on_a_mismatch() {
    let text = "-- KEYS[1] meta: m\n-- KEYS[2] shares: s\n-- ARGV[1] user_id: u\n\
                return redis.call('GET', KEYS[1]) .. KEYS[2] .. ARGV[1]\n";
    let one = |n: &'static str| (n, 1);
    let keys = [one("meta"), one("shares")];
    assert!(check_array(text, "KEYS", &["meta", "shares"], &keys).is_ok());
    // Reordered, missing or extra fields.
    let swapped = [one("shares"), one("meta")];
    assert!(check_array(text, "KEYS", &["shares", "meta"], &swapped).is_err());
    assert!(check_array(text, "KEYS", &["meta"], &keys[..1]).is_err());
    // A slice field where the header has one value.
    let slice = [one("meta"), ("shares", 0)];
    assert!(check_array(text, "KEYS", &["meta", "shares"], &slice).is_err());
    // The body reads a key the header does not list.
    let more = text.replace("KEYS[2] ..", "KEYS[3] ..");
    assert!(check_array(&more, "KEYS", &["meta", "shares"], &keys).is_err());
    // A header index out of place.
    let gap = text.replace("KEYS[2] shares", "KEYS[3] shares");
    assert!(check_array(&gap, "KEYS", &["meta", "shares"], &keys).is_err());
}

#[test]
fn the_embedded_source_is_each_files_code_line_for_line() {
    for (name, lua) in all_lua() {
        let file = file_text(name);
        let sent: Vec<&str> = lua.source().lines().collect();
        let written: Vec<&str> = file.lines().collect();
        assert!(
            sent.len() >= written.len(),
            "{name}: fewer lines sent than written"
        );
        // The file is the end of the source (its helpers come first), line for line.
        let tail = &sent[sent.len() - written.len()..];
        for (n, (sent, written)) in tail.iter().zip(&written).enumerate() {
            let expected = if written.trim_start().starts_with("--") {
                ""
            } else {
                written
            };
            assert_eq!(sent, &expected, "{name}:{}", n + 1);
        }
        let comments = sent.iter().filter(|l| l.trim_start().starts_with("--"));
        assert_eq!(
            comments.count(),
            0,
            "{name}: a comment line is sent to Redis"
        );
    }
}

/// Every script that writes a journal entry (money moved, a coupon issued or redeemed, a
/// campaign closed) is acknowledged by the replicas when `REDIS_WAIT_REPLICAS` is set: an
/// entry lost in a failover would be a movement the feed never hears of.
#[test]
fn every_journaling_script_is_acknowledged() {
    for (name, lua) in all_lua() {
        let body = lua
            .source()
            .rsplit("local function journal_add")
            .next()
            .unwrap_or("");
        if lua.source().contains("local function journal_add") && body.contains("journal_add(") {
            assert!(
                ACKNOWLEDGED.contains(&name),
                "{name} journals but is not acknowledged"
            );
        }
    }
}
