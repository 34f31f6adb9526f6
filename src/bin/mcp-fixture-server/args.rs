//! Reading tool and method arguments; a missing or mistyped one is error
//! -32602.

use serde_json::Value;

use crate::reply::{RpcError, RpcResult};

pub(crate) fn arg_str<'a>(args: &'a Value, name: &str) -> RpcResult<&'a str> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params(format!("Invalid arguments: `{name}` must be a string"))
    })
}

pub(crate) fn opt_u64(args: &Value, name: &str) -> RpcResult<Option<u64>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid arguments: `{name}` must be a non-negative integer"
                ))
            }),
    }
}

pub(crate) fn arg_u64(args: &Value, name: &str) -> RpcResult<u64> {
    opt_u64(args, name)?
        .ok_or_else(|| RpcError::invalid_params(format!("Invalid arguments: `{name}` is required")))
}

pub(crate) fn arg_number(args: &Value, name: &str) -> RpcResult<serde_json::Number> {
    match args.get(name) {
        Some(Value::Number(n)) => Ok(n.clone()),
        _ => Err(RpcError::invalid_params(format!(
            "Invalid arguments: `{name}` must be a number"
        ))),
    }
}

pub(crate) fn take_string(args: &mut Value, name: &str) -> RpcResult<String> {
    match args.get_mut(name).map(Value::take) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(RpcError::invalid_params(format!(
            "Invalid arguments: `{name}` must be a string"
        ))),
    }
}
