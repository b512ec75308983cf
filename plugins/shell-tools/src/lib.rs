//! `shell-tools`: the tool environment of closed-loop runs. It implements
//! the `agentload:tools` world (`wit/agentload-tools@0.1.0`) on
//! [`tool_sandbox`]: `bash`, `str_replace_based_edit_tool` and
//! `apply_patch` over copy-on-write virtual workspaces, `git` inside the
//! shell, stubs for what cannot run. The SDK covers workloads and scorers;
//! this one environment uses wit-bindgen directly, through
//! [`tool_sandbox::tool_environment_bindings`].

#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
tool_sandbox::tool_environment_bindings!(super::component::ShellTools);

#[cfg(target_arch = "wasm32")]
mod component {
    use std::cell::RefCell;
    use tool_sandbox::{Budgets, Layout, Limits, Sandbox, SandboxError, Status, ToolCall};

    use super::bindings::exports::agentload::tools::environment::{
        CallResult, CallStatus, EnvironmentInfo, Guest, Limits as WitLimits, SessionStats,
        ToolCall as WitCall, ToolError, WorkspaceInfo, WorkspaceSpec,
    };

    thread_local! {
        static SANDBOX: RefCell<Option<Sandbox>> = const { RefCell::new(None) };
    }

    fn error(e: SandboxError) -> ToolError {
        match e {
            SandboxError::Workspace(m) => ToolError::InvalidWorkspace(m),
            SandboxError::Unknown(m) => ToolError::Unknown(m),
            SandboxError::Input(m) => ToolError::InvalidInput(m),
        }
    }

    fn with<T>(f: impl FnOnce(&mut Sandbox) -> Result<T, ToolError>) -> Result<T, ToolError> {
        SANDBOX.with(|cell| match cell.borrow_mut().as_mut() {
            Some(sandbox) => f(sandbox),
            None => Err(ToolError::InvalidInput(
                "configure has not been called".into(),
            )),
        })
    }

    pub struct ShellTools;

    impl Guest for ShellTools {
        fn describe() -> EnvironmentInfo {
            EnvironmentInfo {
                name: env!("CARGO_PKG_NAME").into(),
                version: env!("CARGO_PKG_VERSION").into(),
                description: env!("CARGO_PKG_DESCRIPTION").into(),
                tools: tool_sandbox::TOOLS.iter().map(|t| t.to_string()).collect(),
            }
        }

        fn configure(limits: WitLimits) -> Result<(), ToolError> {
            let limits = Limits {
                budgets: Budgets {
                    commands: limits.commands as usize,
                    loop_iterations: limits.loop_iterations as usize,
                    total_loop_iterations: limits.total_loop_iterations as usize,
                    work_units: limits.work_units,
                    output_bytes: limits.output_bytes as usize,
                    ..Budgets::default()
                },
                session_bytes: limits.session_bytes,
                file_bytes: limits.file_bytes,
                session_entries: limits.session_entries,
                archive: tool_sandbox::archive::ArchiveLimits {
                    max_entries: limits.archive_entries,
                    max_bytes: limits.archive_bytes,
                },
            };
            SANDBOX.with(|cell| {
                let mut cell = cell.borrow_mut();
                if cell.is_some() {
                    return Err(ToolError::InvalidInput("configured already".into()));
                }
                *cell = Some(Sandbox::new(limits));
                Ok(())
            })
        }

        fn load_workspace(spec: WorkspaceSpec) -> Result<WorkspaceInfo, ToolError> {
            with(|sandbox| {
                let info = sandbox
                    .load_workspace(
                        &spec.name,
                        &spec.archive,
                        Layout {
                            mount: spec.mount,
                            branch: spec.branch,
                        },
                    )
                    .map_err(error)?;
                Ok(WorkspaceInfo {
                    files: info.files,
                    directories: info.directories,
                    bytes: info.bytes,
                })
            })
        }

        fn open_session(session_id: String, workspace: String, seed: u64) -> Result<(), ToolError> {
            with(|sandbox| sandbox.open(&session_id, &workspace, seed).map_err(error))
        }

        fn call(session_id: String, call: WitCall) -> Result<CallResult, ToolError> {
            with(|sandbox| {
                let result = sandbox
                    .call(
                        &session_id,
                        &ToolCall {
                            name: call.name,
                            arguments: call.arguments,
                        },
                    )
                    .map_err(error)?;
                Ok(CallResult {
                    status: match result.status {
                        Status::Executed => CallStatus::Executed,
                        Status::Stubbed => CallStatus::Stubbed,
                    },
                    output: result.output,
                    exit_code: result.exit_code,
                    detail: result.detail,
                    class: result.class.name().into(),
                })
            })
        }

        fn stats(session_id: String) -> Result<SessionStats, ToolError> {
            with(|sandbox| {
                let stats = sandbox.stats(&session_id).map_err(error)?;
                Ok(SessionStats {
                    overlay_bytes: stats.overlay_bytes,
                    files: stats.files,
                    bytes: stats.bytes,
                    slept_ms: stats.slept_ms,
                })
            })
        }

        fn close_session(session_id: String) {
            let _ = with(|sandbox| {
                sandbox.close(&session_id);
                Ok(())
            });
        }
    }
}
