//! The gate's sample set: the selected subsets' first rows, one session per
//! sample, and the request each sends.

use crate::dataset::{self, Entry};
use crate::settings::Settings;
use crate::subsets::{self, Subset};
use crate::tools;
use agentload_sdk::{Config, Error, Message, Role, Sampling, Turn};
use std::collections::HashMap;

/// One issued sample.
#[derive(Debug)]
pub struct Sample {
    pub subset: &'static Subset,
    pub entry: Entry,
    /// The `tools` array's JSON; none when the entry has no functions (BFCL
    /// sends `tools` only when non-empty; OpenAI rejects an empty array).
    pub tools_json: Option<String>,
}

/// The configured gate.
#[derive(Debug)]
pub struct Gate {
    pub samples: Vec<Sample>,
    index: HashMap<String, usize>,
    settings: Settings,
}

fn data_error(e: dataset::DataError) -> Error {
    Error::data(e.file, e.line, e.message)
}

impl Gate {
    /// Selects the samples from the granted files (`<subset>` questions and
    /// `<subset>_answers` answers for every subset of the chosen categories).
    pub fn configure(settings: Settings, config: &Config) -> Result<Self, Error> {
        let file = |name: &str| {
            config.files.iter().find(|f| f.name == name).ok_or_else(|| {
                Error::config(format!(
                    "no data file granted as '{name}' (the gate needs <subset> and <subset>_answers for every subset it issues)"
                ))
            })
        };
        let mut samples = Vec::new();
        for subset in subsets::ALL
            .iter()
            .filter(|s| settings.categories.iter().any(|c| c == s.category))
        {
            let questions = file(subset.name)?;
            let total = dataset::count(&questions.bytes);
            let n =
                subsets::sample_size(total, settings.pct(subset.category), settings.subset_floor);
            let answers = if subset.has_answers {
                Some(file(&format!("{}_answers", subset.name))?)
            } else {
                None
            };
            let entries = dataset::read(
                (&questions.file_name, &questions.bytes),
                answers.map(|a| (a.file_name.as_str(), a.bytes.as_slice())),
                Some(n),
            )
            .map_err(data_error)?;
            for mut entry in entries {
                let mut functions = std::mem::take(&mut entry.functions);
                let tools = if settings.language_hints {
                    tools::add_language_hints(&mut functions, subset.language)
                } else {
                    Ok(())
                }
                .and_then(|()| tools::into_tools(functions))
                .map_err(|e| Error::data(&questions.file_name, 0, format!("{}: {e}", entry.id)))?;
                let tools_json = (!tools.is_empty())
                    .then(|| serde_json::to_string(&tools).expect("tools serialise"));
                samples.push(Sample {
                    subset,
                    entry,
                    tools_json,
                });
            }
        }
        let mut index = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            if index.insert(s.entry.id.clone(), i).is_some() {
                return Err(Error::data(
                    s.subset.name,
                    0,
                    format!("duplicate entry id '{}'", s.entry.id),
                ));
            }
        }
        Ok(Self {
            samples,
            index,
            settings,
        })
    }

    /// The turn of sample `id`.
    pub fn request(&self, id: &str) -> Result<Turn, Error> {
        let sample = self
            .index
            .get(id)
            .map(|&i| &self.samples[i])
            .ok_or_else(|| Error::input(format!("unknown session '{id}'")))?;
        let entry = &sample.entry;
        let messages = entry
            .messages
            .iter()
            .map(|m| {
                let role = match m.role.as_str() {
                    "system" => Role::System,
                    "assistant" => Role::Assistant,
                    _ => Role::User,
                };
                Message::new(role, m.content.clone().unwrap_or_default())
            })
            .collect();
        // The raw function docs and ground truth, verbatim: the scorer reads
        // them with Python's json.loads (every digit, 5 apart from 5.0).
        let expected = format!(
            r#"{{"id":{},"subset":"{}","category":"{}","language":"{}","functions":{},"ground_truth":{}}}"#,
            serde_json::Value::from(entry.id.as_str()),
            sample.subset.name,
            sample.subset.category,
            sample.subset.language,
            entry.functions_raw.get(),
            entry.ground_truth_raw.as_ref().map_or("null", |r| r.get()),
        );
        Ok(Turn::new(1, messages)
            .with_item_id(entry.id.clone())
            .with_tools_json(sample.tools_json.clone())
            .with_sampling(Sampling {
                temperature: Some(self.settings.temperature),
                seed: Some(self.settings.seed),
                max_completion_tokens: Some(self.settings.max_completion_tokens),
                tool_choice_json: self.settings.tool_choice_json(),
                ..Sampling::default()
            })
            .with_expected_json(expected))
    }
}
