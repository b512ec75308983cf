//! Settings and granted files: the chores of `configure`.

use crate::Error;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Configuration handed to a plugin once, before any other call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The plugin's table from the run config, as a JSON object text.
    pub settings_json: String,
    /// The data files the run config grants to this plugin.
    pub files: Vec<GrantedFile>,
    /// 32 random decimal digits separated by single spaces, drawn by the
    /// host for each run (the same on its resume; a sweep draws one per
    /// phase): the only entropy a plugin sees, e.g. a per-run cache
    /// namespace. Empty for a scorer (its verdicts depend on its items
    /// alone) and in [`Config::with_settings`].
    pub nonce: String,
}

/// A file the host granted to the plugin, passed as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedFile {
    /// Logical name from the run config (e.g. `trajectories`), not a host path.
    pub name: String,
    /// Base name of the file on the host, for error messages.
    pub file_name: String,
    pub bytes: Vec<u8>,
}

impl Config {
    /// A config with these settings (a JSON object text) and no files, for tests.
    pub fn with_settings(settings_json: impl Into<String>) -> Self {
        Self {
            settings_json: settings_json.into(),
            files: Vec::new(),
            nonce: String::new(),
        }
    }

    /// The same config with this nonce, for tests.
    pub fn with_nonce(mut self, nonce: impl Into<String>) -> Self {
        self.nonce = nonce.into();
        self
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
    /// keys. No settings at all read as `{}`; anything but a table (a JSON
    /// object) is an error, even where `T` would accept it (serde reads a
    /// struct from an array too).
    pub fn settings<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_value(Value::Object(self.table()?))
            .map_err(|e| Error::config(format!("settings: {e}")))
    }

    /// The settings as a JSON object.
    fn table(&self) -> Result<serde_json::Map<String, Value>, Error> {
        let text = if self.settings_json.trim().is_empty() {
            "{}"
        } else {
            &self.settings_json
        };
        match serde_json::from_str(text) {
            Ok(Value::Object(table)) => Ok(table),
            Ok(other) => Err(Error::config(format!(
                "settings: a table (a JSON object) is needed, not {other}"
            ))),
            Err(e) => Err(Error::config(format!("settings: {e}"))),
        }
    }

    /// The settings table over `defaults`: each key the table sets replaces
    /// the default's, the others keep it. For plugins whose defaults are not
    /// `T::default()` (one crate's code behind two flavours with different
    /// defaults). Put `#[serde(deny_unknown_fields)]` on `T` so that a
    /// misspelt key is an error naming it.
    pub fn settings_over<T: Serialize + DeserializeOwned>(&self, defaults: &T) -> Result<T, Error> {
        let Value::Object(mut merged) = serde_json::to_value(defaults)
            .map_err(|e| Error::internal(format!("default settings: {e}")))?
        else {
            return Err(Error::internal("default settings are not a table"));
        };
        merged.extend(self.table()?);
        serde_json::from_value(Value::Object(merged))
            .map_err(|e| Error::config(format!("settings: {e}")))
    }

    /// Refuses every setting: for plugins that take none. No settings, or an
    /// empty table, pass. A key is an [`Error::Config`] naming it, as
    /// [`settings`](Self::settings) names an unknown key ("settings: unknown
    /// field \`mode\`, this plugin takes no settings"); so is anything but a
    /// table.
    pub fn no_settings(&self) -> Result<(), Error> {
        match self.table()?.keys().next() {
            Some(key) => Err(Error::config(format!(
                "settings: unknown field `{key}`, this plugin takes no settings"
            ))),
            None => Ok(()),
        }
    }

    /// Refuses every granted file: for plugins that read none, so that a
    /// grant meant for another plugin is an error naming it.
    pub fn refuse_files(&self) -> Result<(), Error> {
        match self.files.first() {
            Some(f) => Err(Error::config(format!(
                "this plugin reads no data files, but `{}` ({}) was granted",
                f.name, f.file_name
            ))),
            None => Ok(()),
        }
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
