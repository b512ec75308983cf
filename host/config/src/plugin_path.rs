//! Finding plugin components by name.

use std::path::{Path, PathBuf};

/// Resolves `spec` (a plugin name like `coding-replay`, or a path to a
/// `.wasm`) to a file. Names are looked up as `<name>.wasm` in, in order:
/// `configured`, `$AGENTLOAD_PLUGIN_DIR`, `plugins/` next to the executable's
/// directory (`target/plugins` for a cargo build), and `./target/plugins`.
pub fn resolve(spec: &str, configured: Option<&Path>) -> Result<PathBuf, String> {
    if spec.ends_with(".wasm") || spec.contains('/') {
        let path = PathBuf::from(spec);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("plugin file {} not found", path.display()))
        };
    }
    let file = format!("{}.wasm", spec.replace('-', "_"));
    let dirs = search_dirs(configured);
    dirs.iter()
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            format!(
                "plugin `{spec}` not found as {file} in [{}]; build the plugins with scripts/build-plugins.sh",
                looked.join(", ")
            )
        })
}

fn search_dirs(configured: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    dirs.extend(configured.map(Path::to_path_buf));
    dirs.extend(std::env::var_os("AGENTLOAD_PLUGIN_DIR").map(PathBuf::from));
    if let Ok(exe) = std::env::current_exe() {
        if let Some(profile_dir) = exe.parent() {
            dirs.push(profile_dir.join("../plugins"));
            // Test binaries live one level deeper (target/debug/deps).
            dirs.push(profile_dir.join("../../plugins"));
        }
    }
    dirs.push(PathBuf::from("target/plugins"));
    dirs
}
