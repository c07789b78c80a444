//! RESP framing: where a value ends, how many commands a client's bytes complete, and the error
//! replies among a server's bytes.

use std::collections::HashMap;

use crate::proxy::{Chunk, Phase};

/// Error replies (`-` or `!`) among the complete top-level replies in `received`, per phase
/// (`[setup, storm]`; a reply counts in the phase of the chunk that completes it), and the
/// first one of each phase.
pub fn recorded_errors(received: &[Chunk]) -> Result<([u64; 2], [Option<String>; 2]), String> {
    let mut pending: HashMap<usize, Vec<u8>> = HashMap::new();
    let (mut counts, mut first) = ([0u64; 2], [None, None]);
    for c in received.iter().filter(|c| c.phase != Phase::After) {
        let k = usize::from(c.phase == Phase::Storm);
        let buf = pending.entry(c.conn).or_default();
        buf.extend_from_slice(&c.bytes);
        let mut pos = 0;
        while pos < buf.len() {
            let Some(end) = value_end(buf, pos)? else {
                break;
            };
            if matches!(buf[pos], b'-' | b'!') {
                counts[k] += 1;
                first[k].get_or_insert_with(|| {
                    String::from_utf8_lossy(&buf[pos..end]).trim().to_string()
                });
            }
            pos = end;
        }
        buf.drain(..pos);
    }
    Ok((counts, first))
}

/// The end of the RESP value (RESP2 or RESP3) that starts at `pos` in `buf`, or `None` if
/// `buf` ends before it does. An attribute (`|`) is part of the value after it.
pub fn value_end(buf: &[u8], pos: usize) -> Result<Option<usize>, String> {
    let Some(cr) = buf[pos..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[pos + 1..pos + cr];
    let next = pos + cr + 2;
    let len = || -> Result<i64, String> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad RESP length {:?}", String::from_utf8_lossy(line)))
    };
    match buf[pos] {
        b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Ok(Some(next)),
        b'$' | b'!' | b'=' => {
            let n = len()?;
            if n < 0 {
                return Ok(Some(next));
            }
            let end = next + n as usize + 2;
            Ok((buf.len() >= end).then_some(end))
        }
        kind @ (b'*' | b'~' | b'>' | b'%' | b'|') => {
            let n = len()?;
            let items = if matches!(kind, b'%' | b'|') {
                2 * n
            } else {
                n
            };
            let mut p = next;
            for _ in 0..items.max(0) {
                match value_end(buf, p)? {
                    Some(end) => p = end,
                    None => return Ok(None),
                }
            }
            if kind == b'|' {
                if p >= buf.len() {
                    return Ok(None);
                }
                return value_end(buf, p);
            }
            Ok(Some(p))
        }
        other => Err(format!("unexpected RESP type byte {other:#04x} at {pos}")),
    }
}

/// The complete commands at the start of `buf` (RESP arrays, or inline lines) and the bytes
/// they take; the rest is the beginning of a command split over chunks. An empty array or an
/// empty inline line is no command (the server answers nothing).
pub fn complete_commands(buf: &[u8]) -> Result<(usize, usize), String> {
    let (mut pos, mut commands) = (0, 0);
    while pos < buf.len() {
        if buf[pos] == b'*' {
            let Some(end) = value_end(buf, pos)? else {
                break;
            };
            let header = &buf[pos + 1..];
            let digits = header
                .iter()
                .position(|&b| b == b'\r')
                .unwrap_or(header.len());
            let n: i64 = std::str::from_utf8(&header[..digits])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            commands += usize::from(n > 0);
            pos = end;
        } else {
            let Some(nl) = buf[pos..].iter().position(|&b| b == b'\n') else {
                break;
            };
            commands += usize::from(!buf[pos..pos + nl].trim_ascii().is_empty());
            pos += nl + 1;
        }
    }
    Ok((commands, pos))
}
