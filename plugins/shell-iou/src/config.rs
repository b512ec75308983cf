//! The plugin's settings: there are none.

use serde_json::Value;

/// Accepts an empty settings object and no granted files.
pub fn check(settings_json: &str, file_names: &[&str]) -> Result<(), String> {
    let settings: Value = serde_json::from_str(settings_json)
        .map_err(|e| format!("settings are not valid JSON: {e}"))?;
    let Value::Object(settings) = settings else {
        return Err("settings must be a JSON object".into());
    };
    if let Some(key) = settings.keys().next() {
        return Err(format!(
            "unknown setting `{key}`: shell-iou takes no settings"
        ));
    }
    if let Some(name) = file_names.first() {
        return Err(format!(
            "unexpected data file `{name}`: shell-iou reads no files"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_an_empty_object() {
        assert_eq!(check("{}", &[]), Ok(()));
        assert_eq!(check(" { } ", &[]), Ok(()));
        let err = check(r#"{"threshold": 0.5}"#, &[]).unwrap_err();
        assert!(err.contains("`threshold`"), "{err}");
        assert!(check("[]", &[]).is_err());
        assert!(check("null", &[]).is_err());
        assert!(check("", &[]).is_err());
        let err = check("{}", &["trajectories"]).unwrap_err();
        assert!(err.contains("`trajectories`"), "{err}");
    }
}
