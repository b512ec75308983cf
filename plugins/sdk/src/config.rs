//! Settings and granted files: the chores of `configure`.

use crate::wit::agentload::plugin::types::{GrantedFile, PluginConfig};
use crate::Error;
use serde::de::DeserializeOwned;

impl PluginConfig {
    /// A config with these settings (a JSON object text) and no files, for tests.
    pub fn with_settings(settings_json: impl Into<String>) -> Self {
        Self {
            settings_json: settings_json.into(),
            files: Vec::new(),
        }
    }

    /// The same config with one more granted file, for tests.
    pub fn grant(
        mut self,
        name: impl Into<String>,
        file_name: impl Into<String>,
        bytes: impl Into<Vec<u8>>,
    ) -> Self {
        self.files.push(GrantedFile {
            name: name.into(),
            file_name: file_name.into(),
            bytes: bytes.into(),
        });
        self
    }

    /// The settings table, deserialized. Put `#[serde(deny_unknown_fields)]`
    /// on `T` so that a misspelt key is an error naming it (`unknown field
    /// `temprature`, expected one of ...`); `#[serde(default)]` for optional
    /// keys. No settings at all read as `{}`.
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T, Error> {
        let text = if self.settings_json.trim().is_empty() {
            "{}"
        } else {
            &self.settings_json
        };
        serde_json::from_str(text).map_err(|e| Error::config(format!("settings: {e}")))
    }

    /// The file granted under the logical `name` (the key in the run
    /// config's `data` table, or `--data NAME=FILE`).
    pub fn file(&self, name: &str) -> Result<&GrantedFile, Error> {
        self.files.iter().find(|f| f.name == name).ok_or_else(|| {
            let granted: Vec<&str> = self.files.iter().map(|f| f.name.as_str()).collect();
            Error::config(format!(
                "no data file granted as `{name}` (granted: {}); grant one in the run config's \
                 `data` table ({name} = \"FILE\") or with `--data {name}=FILE`",
                if granted.is_empty() {
                    "none".to_string()
                } else {
                    granted.join(", ")
                }
            ))
        })
    }

    /// The granted file `name` as UTF-8 text.
    pub fn text(&self, name: &str) -> Result<&str, Error> {
        let file = self.file(name)?;
        std::str::from_utf8(&file.bytes)
            .map_err(|e| Error::data(&file.file_name, 0, format!("not UTF-8: {e}")))
    }

    /// The lines of the granted file `name`, numbered from 1.
    pub fn lines(&self, name: &str) -> Result<Lines<'_>, Error> {
        let file = self.file(name)?;
        let text = self.text(name)?;
        Ok(Lines {
            file: &file.file_name,
            inner: text.lines().enumerate(),
        })
    }

    /// Every non-blank line of the granted JSONL file `name`, deserialized;
    /// a bad line is an [`Error::Data`] naming the file and line.
    pub fn jsonl<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<T>, Error> {
        self.lines(name)?
            .filter(|l| !l.text.trim().is_empty())
            .map(|l| l.json())
            .collect()
    }
}

/// Numbered lines of a granted file.
pub struct Lines<'a> {
    file: &'a str,
    inner: std::iter::Enumerate<std::str::Lines<'a>>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        self.inner.next().map(|(i, text)| Line {
            file: self.file,
            number: i as u32 + 1,
            text,
        })
    }
}

/// One line of a granted file, with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// The file's name, for messages.
    pub file: &'a str,
    /// 1-based.
    pub number: u32,
    pub text: &'a str,
}

impl Line<'_> {
    /// An [`Error::Data`] at this line.
    pub fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::data(self.file, self.number, message)
    }

    /// The line as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(self.text).map_err(|e| self.error(format!("invalid JSON: {e}")))
    }
}
