//! [`Tokenizer`]: a vocabulary with a model's chat template, counting
//! prompts and completions as the MLPerf endpoints reference counts them.
//! The vocabulary is Qwen3.5/3.6's (the built-in [`QwenTokenizer`]) or any
//! model's Hugging Face `tokenizer.json` (the `tokenizers` crate).

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::{ChatOptions, ChatTemplate, CountedText, QwenTokenizer, TokenizerError};

/// The vocabulary a [`Tokenizer`] encodes with.
#[derive(Clone)]
enum Vocab {
    Qwen(Arc<QwenTokenizer>),
    HuggingFace(Arc<tokenizers::Tokenizer>),
}

/// A prompt's tokens, and what counting the next prompt of its conversation after it needs
/// ([`Tokenizer::count_chat_after`]).
#[derive(Debug, Clone, Default)]
pub struct PromptCount {
    tokens: usize,
    /// The rendered text as counted (the Qwen vocabulary only).
    text: Option<CountedText>,
}

impl PromptCount {
    /// The prompt's tokens.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Of [`tokens`](Self::tokens), those taken from the earlier prompt's count rather than
    /// encoded.
    pub fn reused_tokens(&self) -> usize {
        self.text.as_ref().map_or(0, CountedText::reused_tokens)
    }
}

/// A vocabulary with a chat template: what agentload counts ISL and OSL
/// with.
pub struct Tokenizer {
    vocab: Vocab,
    /// The chat template prompts and completions are rendered with.
    template: ChatTemplate,
    /// Tokens of `[user ""]` rendered without a generation prompt.
    prefix_len: usize,
    /// Tokens an empty assistant turn adds after that prefix.
    baseline: usize,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let vocab = match &self.vocab {
            Vocab::Qwen(_) => "qwen3.6",
            Vocab::HuggingFace(_) => "tokenizer.json",
        };
        f.debug_struct("Tokenizer")
            .field("vocab", &vocab)
            .field("template", &self.template)
            .finish()
    }
}

impl Tokenizer {
    /// Qwen3.6's vocabulary with its own chat template.
    pub fn qwen(vocab: Arc<QwenTokenizer>) -> Self {
        Self::with_vocab(Vocab::Qwen(vocab), ChatTemplate::qwen3_6())
            .expect("the built-in template renders the framing messages")
    }

    /// A Hugging Face `tokenizer.json` (any model's: its normalizer,
    /// pre-tokenizer, model and added tokens) with `template`. Errors name
    /// the file.
    pub fn hugging_face(path: &Path, template: ChatTemplate) -> Result<Self, TokenizerError> {
        let vocab = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::Vocab {
            path: path.to_path_buf(),
            line: 0,
            reason: format!("not a Hugging Face tokenizer.json: {e}"),
        })?;
        Self::with_vocab(Vocab::HuggingFace(Arc::new(vocab)), template)
    }

    fn with_vocab(vocab: Vocab, template: ChatTemplate) -> Result<Self, TokenizerError> {
        let mut tokenizer = Tokenizer {
            vocab,
            template,
            prefix_len: 0,
            baseline: 0,
        };
        tokenizer.measure_framing()?;
        Ok(tokenizer)
    }

    /// The same (shared) vocabulary with another chat template (a model
    /// config's `chat_template` file). Fails when the template cannot
    /// render the framing the completion count subtracts (`[user ""]` and
    /// `[user "", assistant ""]`).
    pub fn with_template(&self, template: ChatTemplate) -> Result<Self, TokenizerError> {
        Self::with_vocab(self.vocab.clone(), template)
    }

    /// The chat template in use.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Tokens of `[user ""]` and of an empty assistant turn after it, both
    /// rendered without a generation prompt.
    fn measure_framing(&mut self) -> Result<(), TokenizerError> {
        let no_prompt = ChatOptions::no_generation_prompt();
        let user = json!({"role": "user", "content": ""});
        let assistant = json!({"role": "assistant", "content": ""});
        let count = |messages: &[Value]| -> Result<usize, TokenizerError> {
            let text = self.template.render(messages, None, &no_prompt)?;
            Ok(self.count_with_special_tokens(&text))
        };
        let prefix_len = count(std::slice::from_ref(&user))?;
        let with_assistant = count(&[user, assistant])?;
        self.prefix_len = prefix_len;
        self.baseline = with_assistant.saturating_sub(prefix_len);
        Ok(())
    }

    /// Number of tokens of `text`, special tokens (added tokens) recognised
    /// and none added around it (`add_special_tokens=False`).
    pub fn count_with_special_tokens(&self, text: &str) -> usize {
        match &self.vocab {
            Vocab::Qwen(qwen) => qwen.count_with_special_tokens(text),
            // An encoding error (none is known for byte-level vocabularies)
            // counts as no tokens rather than failing the phase's counts.
            Vocab::HuggingFace(hf) => hf.encode_fast(text, false).map_or(0, |e| e.len()),
        }
    }

    /// Input sequence length of a chat request: the tokens of the chat
    /// template's text, special tokens recognised.
    ///
    /// The reference renders the ISL with `add_generation_prompt=True` and
    /// the request's `chat_template_kwargs` (none in the edge benchmark, so
    /// Qwen3.6's prompt ends `<think>\n`; `enable_thinking: false` adds the
    /// two tokens of the empty think block a server with reasoning off sees).
    pub fn count_chat(
        &self,
        messages: &[Value],
        tools: Option<&[Value]>,
        opts: &ChatOptions,
    ) -> Result<usize, TokenizerError> {
        Ok(self.count_with_special_tokens(&self.template.render(messages, tools, opts)?))
    }

    /// [`count_chat`](Self::count_chat), given the count of an `earlier` prompt of the same
    /// conversation: with the Qwen vocabulary the rendered text is encoded only from the
    /// last special token both prompts share
    /// ([`QwenTokenizer::count_with_special_tokens_after`]); a Hugging Face vocabulary
    /// counts the whole text. The count is the whole prompt's either way.
    pub fn count_chat_after(
        &self,
        earlier: Option<&PromptCount>,
        messages: &[Value],
        tools: Option<&[Value]>,
        opts: &ChatOptions,
    ) -> Result<PromptCount, TokenizerError> {
        let text = self.template.render(messages, tools, opts)?;
        Ok(match &self.vocab {
            Vocab::Qwen(qwen) => {
                let earlier = earlier.and_then(|e| e.text.as_ref());
                let counted = qwen.count_with_special_tokens_after(earlier, &text);
                PromptCount {
                    tokens: counted.tokens(),
                    text: Some(counted),
                }
            }
            Vocab::HuggingFace(_) => PromptCount {
                tokens: self.count_with_special_tokens(&text),
                text: None,
            },
        })
    }

    /// Output sequence length of a completion, as the reference counts it.
    ///
    /// With no reasoning and no tool calls: the tokens of `content`. Else
    /// the assistant message (`content`, `reasoning_content`, `tool_calls`
    /// with their `function.arguments` strings parsed) is rendered after an
    /// empty user turn, without generation prompt, and the tokens of the
    /// empty user turn and of an empty assistant turn's framing are
    /// subtracted. Where the template cannot render the message (say,
    /// truncated arguments JSON), the count falls back, like the
    /// reference's, to the text `content`, `reasoning` and the tool calls'
    /// compact JSON, the non-empty ones joined by newlines.
    pub fn count_completion(
        &self,
        content: &str,
        reasoning: Option<&str>,
        tool_calls: Option<&[Value]>,
    ) -> usize {
        let reasoning = reasoning.filter(|r| !r.is_empty());
        let tool_calls = tool_calls.filter(|t| !t.is_empty());
        if reasoning.is_none() && tool_calls.is_none() {
            return self.count_with_special_tokens(content);
        }
        let mut assistant = Map::new();
        assistant.insert("role".into(), "assistant".into());
        assistant.insert("content".into(), content.into());
        if let Some(reasoning) = reasoning {
            assistant.insert("reasoning_content".into(), reasoning.into());
        }
        if let Some(calls) = tool_calls {
            assistant.insert("tool_calls".into(), Value::Array(calls.to_vec()));
        }
        let messages = [
            json!({"role": "user", "content": ""}),
            Value::Object(assistant),
        ];
        match self
            .template
            .render(&messages, None, &ChatOptions::no_generation_prompt())
        {
            Ok(text) => self
                .count_with_special_tokens(&text)
                .saturating_sub(self.prefix_len + self.baseline),
            Err(_) => {
                let calls_json = tool_calls.map(|c| Value::Array(c.to_vec()).to_string());
                let parts: Vec<&str> = [Some(content), reasoning, calls_json.as_deref()]
                    .into_iter()
                    .flatten()
                    .filter(|p| !p.is_empty())
                    .collect();
                self.count_with_special_tokens(&parts.join("\n"))
            }
        }
    }
}
