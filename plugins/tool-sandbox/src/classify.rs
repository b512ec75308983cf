//! The kind of a tool call, from the commands it names: what the latency
//! model draws a delay for and what the cost tables group by.

use serde::Serialize;

/// A call's kind, the first that applies in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// A stubbed command or an unknown tool.
    Stub,
    /// `git`.
    Git,
    /// Changes files: a write redirect, `sed -i`, `mv`, `rm`, the editor's
    /// changes, `apply_patch`...
    Edit,
    /// Searches: `grep`, `rg`, `find`, `ls`...
    Search,
    /// Reads: `cat`, `head`, `sed -n`, `wc`, the editor's `view`...
    View,
    /// Anything else (`echo`, `cd`, arithmetic...).
    Other,
}

impl Class {
    /// Every class, in order.
    pub const ALL: [Class; 6] = [
        Class::Stub,
        Class::Git,
        Class::Edit,
        Class::Search,
        Class::View,
        Class::Other,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Stub => "stub",
            Class::Git => "git",
            Class::Edit => "edit",
            Class::Search => "search",
            Class::View => "view",
            Class::Other => "other",
        }
    }

    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == name)
    }
}

const EDITS: &[&str] = &[
    "mv",
    "rm",
    "rmdir",
    "mkdir",
    "cp",
    "touch",
    "tee",
    "chmod",
    "ln",
    "patch",
    "apply_patch",
    "truncate",
    "dd",
    "unzip",
    "tar",
];
const SEARCHES: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "find", "ls", "tree", "fd", "ag", "locate", "du",
];
const VIEWS: &[&str] = &[
    "cat", "head", "tail", "sed", "nl", "less", "more", "wc", "awk", "cut", "sort", "uniq", "diff",
    "cmp", "od", "xxd", "hexdump", "stat", "file", "jq", "column", "tac", "strings",
];

/// The class of a shell command, from bashkit's static analysis of it.
pub fn command(bash: &bashkit::Bash, script: &str) -> Class {
    let Ok(analysis) = bash.analyze(script) else {
        return Class::Other;
    };
    let names = analysis.command_names();
    if names.contains(&"git") {
        return Class::Git;
    }
    let writes = analysis
        .redirects
        .iter()
        .any(|r| r.mode.is_write() && r.path.as_deref() != Some("/dev/null"));
    let in_place = analysis.commands.iter().any(|c| {
        matches!(c.name.as_deref(), Some("sed" | "perl"))
            && c.args
                .iter()
                .flatten()
                .any(|a| a == "-i" || a.starts_with("-i") || a == "--in-place")
    });
    if writes || in_place || names.iter().any(|n| EDITS.contains(n)) {
        Class::Edit
    } else if names.iter().any(|n| SEARCHES.contains(n)) {
        Class::Search
    } else if names.iter().any(|n| VIEWS.contains(n)) {
        Class::View
    } else {
        Class::Other
    }
}
