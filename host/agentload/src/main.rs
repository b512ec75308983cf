//! The `agentload` command. Parsing and every command live in the library
//! (`agentload::cli`), so tests can drive a command in process.

fn main() -> std::process::ExitCode {
    agentload::cli::main()
}
