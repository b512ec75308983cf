//! The wasmtime engine shared by all plugins: compilation with an on-disk
//! cache keyed by component digest and engine fingerprint, the WASI-less
//! linker, and the epoch ticker that bounds every call's CPU time.

use super::sandbox::StoreState;
use super::PluginFailure;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

/// How often the epoch advances; per-call time limits are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Compiles, caches and links plugin components.
pub struct PluginEngine {
    engine: Engine,
    linker: Linker<StoreState>,
    cache_dir: Option<PathBuf>,
    ticker_stop: Arc<AtomicBool>,
}

/// A component read from disk, checked and compiled.
#[derive(Clone)]
pub struct LoadedComponent {
    /// Where it was read from.
    pub path: PathBuf,
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    /// Compiled code, ready to instantiate.
    pub component: Component,
    /// Whether the compiled code came from the cache.
    pub from_cache: bool,
}

impl PluginEngine {
    /// An engine with epoch interruption; `cache_dir` holds compiled code
    /// (none disables caching).
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, PluginFailure> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        let engine = Engine::new(&config).map_err(|e| PluginFailure::Engine(e.to_string()))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| PluginFailure::Engine(e.to_string()))?;
        super::bindings::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |state| state,
        )
        .map_err(|e| PluginFailure::Engine(e.to_string()))?;
        // Every supported WIT version's `host` interface (0.0.9 is not
        // semver-compatible with 0.1.0: both names are linked side by side).
        #[cfg(feature = "test-wit-0-0-9")]
        super::bindings_v0_0_9::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
            &mut linker,
            |state| state,
        )
        .map_err(|e| PluginFailure::Engine(e.to_string()))?;
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let (weak, stop) = (engine.weak(), ticker_stop.clone());
        std::thread::Builder::new()
            .name("agentload-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| PluginFailure::Engine(format!("cannot start epoch ticker: {e}")))?;
        Ok(Self {
            engine,
            linker,
            cache_dir,
            ticker_stop,
        })
    }

    /// The default cache directory: `$AGENTLOAD_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/agentload`, else `~/.cache/agentload`.
    pub fn default_cache_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("AGENTLOAD_CACHE_DIR") {
            return Some(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
            return Some(PathBuf::from(dir).join("agentload"));
        }
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("agentload"))
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn linker(&self) -> &Linker<StoreState> {
        &self.linker
    }

    /// Reads a component, computes its digest and compiles it (or loads the
    /// cached compilation for that digest and this engine).
    pub fn load(&self, path: &Path) -> Result<LoadedComponent, PluginFailure> {
        let bytes = std::fs::read(path).map_err(|e| PluginFailure::Load {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        self.load_bytes(path, &bytes)
    }

    /// As [`load`](Self::load), for bytes already read from `path`.
    pub fn load_bytes(&self, path: &Path, bytes: &[u8]) -> Result<LoadedComponent, PluginFailure> {
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        let load_err = |reason: String| PluginFailure::Load {
            path: path.to_path_buf(),
            reason,
        };
        let cached = self.cache_path(&digest);
        if let Some(cached) = &cached {
            if let Some(component) = self.read_cache(cached) {
                return Ok(LoadedComponent {
                    path: path.to_path_buf(),
                    digest,
                    component,
                    from_cache: true,
                });
            }
        }
        let component =
            Component::new(&self.engine, bytes).map_err(|e| load_err(format!("{e:#}")))?;
        if let Some(cached) = &cached {
            // A cache that cannot be written only costs speed next time.
            if let Err(e) = write_cache(cached, &component) {
                crate::log::line(&format!("warning: cannot cache {}: {e}", cached.display()));
            }
        }
        Ok(LoadedComponent {
            path: path.to_path_buf(),
            digest,
            component,
            from_cache: false,
        })
    }

    fn cache_path(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.cache_dir.as_ref()?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        let hex = digest.trim_start_matches("sha256:");
        // The compatibility hash covers wasmtime's version and the engine
        // settings that shape compiled code.
        Some(
            dir.join("components")
                .join(format!("{hex}-{:016x}.cwasm", hasher.finish())),
        )
    }

    fn read_cache(&self, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let expected = std::fs::read_to_string(path.with_extension("cwasm.sha256")).ok()?;
        if hex::encode(Sha256::digest(&bytes)) != expected.trim() {
            return None;
        }
        // SAFETY: the bytes were produced by `Component::serialize` of this
        // same engine configuration (the file name carries its fingerprint)
        // and their sha256 matches the digest written next to them.
        unsafe { Component::deserialize(&self.engine, &bytes) }.ok()
    }
}

fn write_cache(path: &Path, component: &Component) -> std::io::Result<()> {
    let bytes = component
        .serialize()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = path.parent().expect("cache path has a parent");
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &bytes)?;
    std::fs::write(
        path.with_extension("cwasm.sha256"),
        hex::encode(Sha256::digest(&bytes)),
    )?;
    std::fs::rename(&tmp, path)
}

impl Drop for PluginEngine {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
