//! Local output counts as agentperf-local makes them: OpenAI's `o200k_base`
//! through `tiktoken-rs`, which ships the ranks file
//! (`assets/o200k_base.tiktoken`, sha256
//! `446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d`, the
//! digest tiktoken itself checks). Special-token text is counted as ordinary
//! text, as AA's `encode(text, disallowed_special=())` does.

/// Tokens of `text` in o200k_base.
pub fn count(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts tiktoken 0.12 gives for the same strings.
    #[test]
    fn counts_as_tiktoken_does() {
        assert_eq!(count(""), 0);
        assert_eq!(count("hello world"), 2);
        assert_eq!(count("<|endoftext|>"), 7);
        assert_eq!(count(" data data data"), 3);
    }
}
