//! Run ids name a folder under `swe_bench_runs/`: only `^[A-Za-z0-9_-]+$`
//! is accepted, as the reference's `_SAFE_RUN_ID_RE`.

use crate::Error;
use serde_json::Value;

/// The run id in `value`, when it is a safe one.
///
/// # Errors
/// [`Error::RunId`], quoting the value, when it is not a string of ASCII
/// letters, digits, `_` and `-`.
pub fn checked(value: Option<&Value>) -> Result<String, Error> {
    match value {
        Some(Value::String(id))
            if !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            Ok(id.clone())
        }
        other => Err(Error::RunId {
            got: crate::error::shortened(
                &other.map_or_else(|| "(none)".to_owned(), Value::to_string),
                80,
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_safe_ids_pass() {
        for ok in ["run-1", "0f3c5e8a9b7d4c2e", "A_b-9"] {
            assert_eq!(checked(Some(&json!(ok))).unwrap(), ok);
        }
        for bad in [
            json!("../outside"),
            json!("a/b"),
            json!(""),
            json!("run 1"),
            json!("run-1\n"),
            json!("rün"),
            json!(7),
            Value::Null,
        ] {
            let err = checked(Some(&bad)).unwrap_err().to_string();
            assert!(err.contains("invalid run_id"), "{bad}: {err}");
        }
        assert!(checked(None).is_err());
    }
}
