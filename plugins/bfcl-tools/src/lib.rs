//! BFCL function docs as OpenAI tools, shared by the BFCL workloads
//! (`bfcl-single`, `bfcl-multi`): [`tools::convert`] is BFCL's
//! `convert_to_tool(functions, GORILLA_TO_OPENAPI,
//! ModelStyle.OPENAI_COMPLETIONS)`, [`tools::add_language_hints`] its
//! language-specific pre-processing (Python's `json.dumps` from `pysem`).
//! A plain library (no component bindings), so that a
//! workload can use it without another plugin's exports.

#![forbid(unsafe_code)]

pub mod tools;
