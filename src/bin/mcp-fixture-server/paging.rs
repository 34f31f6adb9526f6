//! Pagination of the lists: opaque base64 cursors (`offset=N`).

use serde_json::{Map, Value};

use crate::reply::{Reply, RpcError, RpcResult};

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = B64.iter().position(|&x| x == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Cuts `items` into a page starting at `params.cursor`; returns the page and
/// the next cursor.
pub(crate) fn paginate(
    mut items: Vec<Value>,
    params: &Value,
    page_size: usize,
) -> RpcResult<(Vec<Value>, Option<String>)> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(c)) => b64_decode(c)
            .and_then(|raw| String::from_utf8(raw).ok())
            .and_then(|s| {
                s.strip_prefix("offset=")
                    .and_then(|n| n.parse::<usize>().ok())
            })
            .filter(|&n| n > 0 && n < items.len())
            .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {c}")))?,
        Some(_) => return Err(RpcError::invalid_params("Invalid cursor: not a string")),
    };
    if page_size == 0 {
        return Ok((items, None));
    }
    let end = start.saturating_add(page_size).min(items.len());
    let next = (end < items.len()).then(|| b64_encode(format!("offset={end}").as_bytes()));
    items.truncate(end);
    items.drain(..start);
    Ok((items, next))
}

pub(crate) fn list_result(key: &str, page: (Vec<Value>, Option<String>)) -> Reply {
    let mut result = Map::new();
    result.insert(key.to_string(), Value::Array(page.0));
    if let Some(next) = page.1 {
        result.insert("nextCursor".to_string(), Value::String(next));
    }
    Reply::Result(Value::Object(result))
}
