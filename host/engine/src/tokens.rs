//! Local token counts with the Qwen3.6 tokenizer or a model's Hugging Face
//! `tokenizer.json`, and the model's chat template, as the reference counts (the default source of ISL, OSL, TPOT
//! and `tps`, and the check on the server's `usage`). Counting happens when
//! a phase ends, never beside a stream; the vocabulary (~100 ms to load) loads
//! then, not at start-up ([`LocalCounter::lazy`]).

use crate::LocalTokens;
use agentload_client::Assembled;
use agentload_tokenizer::{
    ChatOptions, ChatTemplate, PromptCount, QwenTokenizer, Tokenizer, TIKTOKEN_RELATIVE_PATH,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Loads the Qwen3.6 vocabulary from `<data_dir>/qwen-tokenizer/`, else from
/// the agentload cache directory (`host/tokenizer/fetch-qwen-tokenizer.sh`
/// installs it in either).
pub fn load_qwen(data_dir: &Path) -> Result<QwenTokenizer, String> {
    let path = find_qwen(data_dir)?;
    QwenTokenizer::load(path).map_err(|e| e.to_string())
}

/// Where [`load_qwen`] would load the vocabulary from (a cheap check: the file is there).
pub fn find_qwen(data_dir: &Path) -> Result<PathBuf, String> {
    let candidates: Vec<PathBuf> = std::iter::once(data_dir.to_path_buf())
        .chain(agentload_config::cache_dir())
        .map(|d| d.join(TIKTOKEN_RELATIVE_PATH))
        .collect();
    let Some(path) = candidates.iter().find(|p| p.is_file()) else {
        let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "no Qwen3.6 vocabulary at {}; run host/tokenizer/fetch-qwen-tokenizer.sh DIR",
            looked.join(" or ")
        ));
    };
    Ok(path.clone())
}

/// A model file named in the config: an absolute path, else relative to
/// the working directory, else to the data directory.
pub fn model_file(path: &Path, data_dir: &Path) -> PathBuf {
    if path.is_absolute() || path.is_file() {
        path.to_path_buf()
    } else {
        data_dir.join(path)
    }
}

/// Reads and compiles a model's chat template file (`model.chat_template`,
/// found as [`model_file`] finds it). Errors name the file.
pub fn load_template(path: &Path, data_dir: &Path) -> Result<ChatTemplate, String> {
    let found = model_file(path, data_dir);
    let source = agentload_fs::read::read_to_string(&found).map_err(|e| {
        format!(
            "model.chat_template: cannot read {} (looked in the working directory and {}): {e}",
            path.display(),
            data_dir.display()
        )
    })?;
    ChatTemplate::new(source).map_err(|e| format!("model.chat_template {}: {e}", found.display()))
}

/// The chat template a Hugging Face model ships beside its `tokenizer.json`:
/// `chat_template` of the `tokenizer_config.json` in the same folder (a
/// string, or a list of `{name, template}` of which `default` is taken).
/// Errors say what to set instead.
pub fn template_beside(tokenizer_json: &Path) -> Result<ChatTemplate, String> {
    let config = tokenizer_json.with_file_name("tokenizer_config.json");
    let unset = |why: String| {
        format!(
            "model.chat_template: not set, and {why}; set model.chat_template to the model's \
             Jinja template file"
        )
    };
    let text = agentload_fs::read::read_to_string(&config)
        .map_err(|e| unset(format!("{} cannot be read ({e})", config.display())))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| unset(format!("{} is not JSON ({e})", config.display())))?;
    let source = match &v["chat_template"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(named) => named
            .iter()
            .find(|t| t["name"] == "default")
            .and_then(|t| t["template"].as_str())
            .map(str::to_owned),
        _ => None,
    }
    .ok_or_else(|| unset(format!("{} has no chat_template", config.display())))?;
    ChatTemplate::new(source).map_err(|e| format!("the chat_template of {}: {e}", config.display()))
}

/// Makes the tokenizer on first use.
type Loader = Box<dyn FnOnce() -> Result<Arc<Tokenizer>, String> + Send>;

/// Counts prompt and completion tokens the way the reference does.
pub struct LocalCounter {
    template_sha256: String,
    tokenizer: OnceLock<Result<Arc<Tokenizer>, String>>,
    loader: Mutex<Option<Loader>>,
}

impl LocalCounter {
    /// A counter over a loaded vocabulary and its chat template (see
    /// [`load_qwen`], [`Tokenizer::with_template`]).
    pub fn new(tokenizer: Arc<Tokenizer>) -> Self {
        Self {
            template_sha256: tokenizer.template().sha256().to_owned(),
            tokenizer: OnceLock::from(Ok(tokenizer)),
            loader: Mutex::new(None),
        }
    }

    /// A counter whose tokenizer `load` makes on first use (off the start-up path), rendering
    /// with the template of sha256 `template_sha256`.
    pub fn lazy(
        template_sha256: String,
        load: impl FnOnce() -> Result<Arc<Tokenizer>, String> + Send + 'static,
    ) -> Self {
        Self {
            template_sha256,
            tokenizer: OnceLock::new(),
            loader: Mutex::new(Some(Box::new(load))),
        }
    }

    /// sha256 of the chat template the counts render with.
    pub fn template_sha256(&self) -> &str {
        &self.template_sha256
    }

    /// Loads the tokenizer now, if it is not yet; the load's error, if it failed.
    pub fn load(&self) -> Result<&Tokenizer, &str> {
        let loaded = self.tokenizer.get_or_init(|| {
            let load = self.loader.lock().expect("loader lock").take();
            load.map_or_else(|| Err("no tokenizer".to_owned()), |load| load())
        });
        loaded.as_deref().map_err(String::as_str)
    }

    /// ISL (chat template with the generation prompt and the request's
    /// `chat_template_kwargs`), OSL, and OSL after the first token-bearing
    /// chunk, for one turn (loading the tokenizer first if needed).
    ///
    /// # Errors
    /// When the tokenizer does not load.
    /// `earlier`: the count of the session's previous prompt, if counted; the prompt is then
    /// encoded only from where the two part ([`Tokenizer::count_chat_after`]). Returns the
    /// prompt's count too, for the session's next turn (none when its template does not
    /// render the messages: its ISL is then 0).
    pub fn count_turn(
        &self,
        earlier: Option<&PromptCount>,
        body: &Value,
        answer: &Assembled,
    ) -> Result<(LocalTokens, Option<PromptCount>), String> {
        let tokenizer = self.load().map_err(str::to_owned)?;
        let prompt = prompt_count(tokenizer, earlier, body).ok();
        let isl = prompt.as_ref().map_or(0, PromptCount::tokens);
        let started = Instant::now();
        let calls = call_values(answer);
        let osl = completion_tokens(
            tokenizer,
            &answer.content,
            &answer.reasoning_content,
            &calls,
        );
        let first = answer.first_chunk.clone().unwrap_or_default();
        let rest = |s: &str, n: usize| s.get(n..).unwrap_or("").to_string();
        let osl_after_first = completion_tokens(
            tokenizer,
            &rest(&answer.content, first.content_bytes),
            &rest(&answer.reasoning_content, first.reasoning_bytes),
            &calls,
        );
        let tokens = LocalTokens {
            isl: isl as u32,
            osl: osl as u32,
            osl_after_first: osl_after_first as u32,
            osl_count_ns: started.elapsed().as_nanos() as u64,
        };
        Ok((tokens, prompt))
    }

    /// A reply's output tokens, as [`LocalCounter::count_turn`] counts its OSL (loading the
    /// tokenizer first if needed).
    ///
    /// # Errors
    /// When the tokenizer does not load.
    pub fn count_reply(&self, reply: &Assembled) -> Result<usize, String> {
        let tokenizer = self.load().map_err(str::to_owned)?;
        let calls = call_values(reply);
        Ok(completion_tokens(
            tokenizer,
            &reply.content,
            &reply.reasoning_content,
            &calls,
        ))
    }

    /// A request body's prompt tokens, as [`LocalCounter::count_turn`] counts its ISL
    /// (loading the tokenizer first if needed).
    ///
    /// # Errors
    /// When the tokenizer does not load or the template does not render the messages.
    pub fn count_prompt(&self, body: &Value) -> Result<usize, String> {
        self.count_prompt_after(None, body).map(|c| c.tokens())
    }

    /// [`LocalCounter::count_prompt`], after the previous prompt of its session (see
    /// [`LocalCounter::count_turn`]).
    ///
    /// # Errors
    /// When the tokenizer does not load or the template does not render the messages.
    pub fn count_prompt_after(
        &self,
        earlier: Option<&PromptCount>,
        body: &Value,
    ) -> Result<PromptCount, String> {
        prompt_count(self.load().map_err(str::to_owned)?, earlier, body)
    }
}

/// A reply's tool calls as OpenAI objects (what the completion count renders).
fn call_values(reply: &Assembled) -> Vec<Value> {
    reply
        .tool_calls
        .iter()
        .map(|c| {
            serde_json::json!({"id": c.id, "type": "function",
            "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect()
}

/// The output tokens of a reply's texts and calls.
fn completion_tokens(
    tokenizer: &Tokenizer,
    content: &str,
    reasoning: &str,
    calls: &[Value],
) -> usize {
    tokenizer.count_completion(content, Some(reasoning), Some(calls))
}

/// The chat template's render of a body's messages and tools, with the generation prompt and
/// the request's `chat_template_kwargs`, counted after `earlier`.
fn prompt_count(
    tokenizer: &Tokenizer,
    earlier: Option<&PromptCount>,
    body: &Value,
) -> Result<PromptCount, String> {
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    let options = ChatOptions {
        kwargs: body
            .get("chat_template_kwargs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        ..ChatOptions::default()
    };
    tokenizer
        .count_chat_after(earlier, messages, tools, &options)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_lazy_counter_loads_once_on_first_use() {
        let loads = Arc::new(AtomicUsize::new(0));
        let seen = loads.clone();
        let counter = LocalCounter::lazy("abc".into(), move || {
            seen.fetch_add(1, Ordering::SeqCst);
            Err("no vocabulary here".into())
        });
        assert_eq!(counter.template_sha256(), "abc");
        assert_eq!(loads.load(Ordering::SeqCst), 0, "not loaded at start-up");
        let body = serde_json::json!({"messages": []});
        let err = counter
            .count_turn(None, &body, &Assembled::default())
            .unwrap_err();
        assert_eq!(err, "no vocabulary here");
        assert_eq!(counter.load().unwrap_err(), "no vocabulary here");
        assert_eq!(loads.load(Ordering::SeqCst), 1, "loaded once");
    }

    #[test]
    fn template_files_are_read_and_compiled_with_clear_errors() {
        let dir = std::env::temp_dir().join(format!("agentload-tpl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ok.jinja"), "{{ messages | length }}").unwrap();
        std::fs::write(dir.join("bad.jinja"), "{% for %}").unwrap();
        let t = load_template(Path::new("ok.jinja"), &dir).unwrap();
        assert_eq!(t.render(&[], None, &ChatOptions::default()).unwrap(), "0");
        let err = load_template(Path::new("bad.jinja"), &dir).unwrap_err();
        assert!(err.contains("bad.jinja"), "{err}");
        let err = load_template(Path::new("missing.jinja"), &dir).unwrap_err();
        assert!(
            err.contains("missing.jinja") && err.contains("model.chat_template"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
