//! The wasmtime engine shared by all plugins: compilation with an on-disk
//! cache of compiled code, the WASI-less linker, and the epoch ticker that
//! bounds every call's wall time.
//!
//! Compiled code is native code: loading it from disk is trusting whoever
//! can write that file. The host trusts a cache entry only when it can show
//! the entry came from the component it is loading: each entry carries an
//! HMAC-SHA256, under a key kept outside the cache directory
//! ([`super::cache_key`]), over the component's digest, the engine's
//! compatibility hash and the compiled bytes. An entry that does not
//! authenticate (rewritten, copied from another component, or left by an
//! older agentload) is reported, never loaded, and replaced by a fresh
//! compilation. A submission run goes further: it compiles every component
//! from its verified bytes and loads nothing compiled from disk
//! ([`PluginEngine::sealed`]).

use super::cache_key::CacheKey;
use super::sandbox::StoreState;
use super::ticker::{Calls, EpochTicker};
use super::PluginFailure;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine};

/// How compiled code on disk is used.
#[derive(Debug, Clone)]
enum CodeCache {
    /// Compile every component; nothing is read or written.
    Off,
    /// Load entries that authenticate, write new ones.
    Use { dir: PathBuf, key: CacheKey },
    /// Compile every component from its bytes; entries on disk are checked
    /// (a tampered one is reported) and rewritten, never loaded.
    CheckOnly { dir: PathBuf, key: CacheKey },
}

/// Compiles, caches and links plugin components.
pub struct PluginEngine {
    engine: Engine,
    /// For scorers: WASI's sync bindings; calls run on the caller's thread.
    linker: Linker<StoreState>,
    /// For workloads: WASI's async bindings; every call is `call_async`, the
    /// guest on a fiber, so a session's call never blocks a runtime worker.
    async_linker: Linker<StoreState>,
    cache: CodeCache,
    ticker: EpochTicker,
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

impl LoadedComponent {
    /// The name errors use before the plugin has described itself: the
    /// file's stem, else `fallback`.
    pub(crate) fn label(&self, fallback: &str) -> String {
        self.path
            .file_stem()
            .map_or_else(|| fallback.into(), |s| s.to_string_lossy().into_owned())
    }
}

/// What a cache entry turned out to be.
enum Entry {
    Missing,
    Authentic(Vec<u8>),
    /// It exists and does not authenticate: why.
    Tampered(String),
}

impl PluginEngine {
    /// An engine for a development run: `cache_dir` holds compiled code,
    /// loaded when it authenticates (none disables caching).
    pub fn new(cache_dir: Option<PathBuf>) -> Result<Self, PluginFailure> {
        let cache = match cache_dir.and_then(|dir| CacheKey::for_cache(&dir).map(|k| (dir, k))) {
            Some((dir, key)) => CodeCache::Use { dir, key },
            None => CodeCache::Off,
        };
        Self::with_cache(cache, false)
    }

    /// An engine for tool environments: like [`new`](Self::new), but every
    /// store meters fuel (each call gets a budget of executed instructions,
    /// the same on every run) and floating point is deterministic (NaNs
    /// canonical, relaxed SIMD as its deterministic lowering). Its compiled
    /// code is cached apart from the plain engine's (another compatibility
    /// hash).
    pub fn metered(cache_dir: Option<PathBuf>) -> Result<Self, PluginFailure> {
        let cache = match cache_dir.and_then(|dir| CacheKey::for_cache(&dir).map(|k| (dir, k))) {
            Some((dir, key)) => CodeCache::Use { dir, key },
            None => CodeCache::Off,
        };
        Self::with_cache(cache, true)
    }

    /// An engine for a submission run: every component is compiled from its
    /// verified bytes; cache entries in `cache_dir` are only checked (a
    /// tampered one is reported) and refreshed, never loaded.
    pub fn sealed(cache_dir: Option<PathBuf>) -> Result<Self, PluginFailure> {
        let cache = match cache_dir.and_then(|dir| CacheKey::for_cache(&dir).map(|k| (dir, k))) {
            Some((dir, key)) => CodeCache::CheckOnly { dir, key },
            None => CodeCache::Off,
        };
        Self::with_cache(cache, false)
    }

    fn with_cache(cache: CodeCache, metered: bool) -> Result<Self, PluginFailure> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        if metered {
            config.consume_fuel(true);
            config.cranelift_nan_canonicalization(true);
            config.relaxed_simd_deterministic(true);
        }
        let engine = Engine::new(&config).map_err(|e| PluginFailure::Engine(e.to_string()))?;
        let engine_err = |e: wasmtime::Error| PluginFailure::Engine(e.to_string());
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(engine_err)?;
        link_host(&mut linker).map_err(engine_err)?;
        let mut async_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut async_linker).map_err(engine_err)?;
        link_host(&mut async_linker).map_err(engine_err)?;
        let ticker = EpochTicker::start(engine.weak())
            .map_err(|e| PluginFailure::Engine(format!("cannot start epoch ticker: {e}")))?;
        Ok(Self {
            engine,
            linker,
            async_linker,
            cache,
            ticker,
        })
    }

    /// What stores count their guest calls with (the epoch ticks faster while any runs).
    pub(crate) fn calls(&self) -> Calls {
        self.ticker.calls()
    }

    /// The wasmtime engine (for inspecting components).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub(crate) fn linker(&self) -> &Linker<StoreState> {
        &self.linker
    }

    /// The linker whose instances are called with `call_async` (workloads).
    pub(crate) fn async_linker(&self) -> &Linker<StoreState> {
        &self.async_linker
    }

    /// Reads a component of at most `max_bytes`, computes its digest and
    /// compiles it (or loads its authenticated compilation).
    pub fn load(&self, path: &Path, max_bytes: u64) -> Result<LoadedComponent, PluginFailure> {
        let bytes = read_component(path, max_bytes)?;
        self.load_bytes(path, &bytes)
    }

    /// As [`load`](Self::load), for bytes already read from `path`.
    pub fn load_bytes(&self, path: &Path, bytes: &[u8]) -> Result<LoadedComponent, PluginFailure> {
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(bytes)));
        let load_err = |reason: String| PluginFailure::Load {
            path: path.to_path_buf(),
            reason,
        };
        let (dir, key, may_load) = match &self.cache {
            CodeCache::Off => {
                let component =
                    Component::new(&self.engine, bytes).map_err(|e| load_err(format!("{e:#}")))?;
                return Ok(LoadedComponent {
                    path: path.to_path_buf(),
                    digest,
                    component,
                    from_cache: false,
                });
            }
            CodeCache::Use { dir, key } => (dir, key, true),
            CodeCache::CheckOnly { dir, key } => (dir, key, false),
        };
        let entry = self.entry_path(dir, &digest);
        let compat = self.compat_hash();
        let mut found = read_entry(&entry, key, &digest, compat);
        // Another process may be compiling this very component (tests side
        // by side, a sweep's shards): wait for its entry rather than compile
        // it twice. The lock lives until this compilation is written.
        let _compiling = if may_load && matches!(found, Entry::Missing) {
            let lock = lock_entry(&entry);
            found = read_entry(&entry, key, &digest, compat);
            lock
        } else {
            None
        };
        // A submission run leaves an authentic entry as it is.
        let keep = !may_load && matches!(found, Entry::Authentic(_));
        match found {
            Entry::Authentic(compiled) if may_load => {
                // SAFETY: the bytes authenticate under the cache key (kept
                // outside the cache directory) as `Component::serialize`
                // output of this engine configuration for this very
                // component digest: written by this host, unchanged since.
                if let Ok(component) = unsafe { Component::deserialize(&self.engine, &compiled) } {
                    return Ok(LoadedComponent {
                        path: path.to_path_buf(),
                        digest,
                        component,
                        from_cache: true,
                    });
                }
            }
            Entry::Tampered(why) => agentload_console::line(&format!(
                "warning: compiled-code cache entry {} does not authenticate ({why}): \
                 not loaded; compiling {} from its verified bytes",
                entry.display(),
                path.display()
            )),
            Entry::Authentic(_) | Entry::Missing => {}
        }
        let component =
            Component::new(&self.engine, bytes).map_err(|e| load_err(format!("{e:#}")))?;
        // A cache that cannot be written only costs speed next time.
        if !keep {
            if let Err(e) = write_entry(&entry, key, &digest, compat, &component) {
                agentload_console::line(&format!("warning: cannot cache {}: {e}", entry.display()));
            }
        }
        Ok(LoadedComponent {
            path: path.to_path_buf(),
            digest,
            component,
            from_cache: false,
        })
    }

    /// The compatibility hash covers wasmtime's version and the engine
    /// settings that shape compiled code.
    fn compat_hash(&self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        hasher.finish()
    }

    fn entry_path(&self, dir: &Path, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        dir.join("components")
            .join(format!("{hex}-{:016x}.cwasm", self.compat_hash()))
    }
}

/// Links every supported WIT version's `host` interface (no two `0.y`
/// versions are semver-compatible: each name is linked side by side).
fn link_host(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    super::bindings::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
        linker,
        |state| state,
    )?;
    super::bindings_v0_1_0::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
        linker,
        |state| state,
    )?;
    super::bindings_v0_2_0::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
        linker,
        |state| state,
    )?;
    super::bindings_v0_3_0::workload::agentload::plugin::host::add_to_linker::<_, HasSelf<_>>(
        linker,
        |state| state,
    )?;
    Ok(())
}

/// Reads a component file of at most `max_bytes` (checked before reading,
/// and again while reading in case it grows).
pub fn read_component(path: &Path, max_bytes: u64) -> Result<Vec<u8>, PluginFailure> {
    let load_err = |reason: String| PluginFailure::Load {
        path: path.to_path_buf(),
        reason,
    };
    let too_big = |bytes: u64| {
        load_err(format!(
            "the component is {bytes} bytes, over plugins.limits.component_mib = {} MiB",
            max_bytes >> 20
        ))
    };
    use agentload_fs::read::{read_capped, CappedReadError};
    read_capped(path, max_bytes).map_err(|e| match e {
        CappedReadError::TooLarge(bytes) => too_big(bytes),
        other => load_err(other.to_string()),
    })
}

/// Takes the lock of an entry about to be compiled (`<entry>.lock`, held
/// until the returned file is dropped); none where it cannot be taken
/// (the compilation then goes ahead unlocked).
fn lock_entry(entry: &Path) -> Option<std::fs::File> {
    std::fs::create_dir_all(entry.parent()?).ok()?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(entry.with_extension("lock"))
        .ok()?;
    file.lock().ok()?;
    Some(file)
}

/// The file holding an entry's authentication tag.
fn tag_path(entry: &Path) -> PathBuf {
    entry.with_extension("cwasm.hmac")
}

fn read_entry(entry: &Path, key: &CacheKey, digest: &str, compat: u64) -> Entry {
    let Ok(compiled) = std::fs::read(entry) else {
        return Entry::Missing;
    };
    let Ok(tag) = std::fs::read_to_string(tag_path(entry)) else {
        return Entry::Tampered("no authentication tag beside it".into());
    };
    if key.verify(&entry_message(digest, compat, &compiled), tag.trim()) {
        Entry::Authentic(compiled)
    } else {
        Entry::Tampered(format!(
            "its tag is not this host's for {digest} and these compiled bytes"
        ))
    }
}

/// What an entry's tag covers: the component's digest, the engine's
/// compatibility hash and the compiled bytes' sha256.
fn entry_message(digest: &str, compat: u64, compiled: &[u8]) -> Vec<u8> {
    let mut m = b"agentload compiled component v1\0".to_vec();
    m.extend_from_slice(digest.as_bytes());
    m.push(0);
    m.extend_from_slice(format!("{compat:016x}").as_bytes());
    m.push(0);
    m.extend_from_slice(&Sha256::digest(compiled));
    m
}

fn write_entry(
    entry: &Path,
    key: &CacheKey,
    digest: &str,
    compat: u64,
    component: &Component,
) -> std::io::Result<()> {
    let bytes = component
        .serialize()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = entry.parent().expect("cache path has a parent");
    std::fs::create_dir_all(dir)?;
    let tag = key.tag(&entry_message(digest, compat, &bytes));
    // Temporary names unique to this writer: two processes, or two phases
    // of one run compiling the same component side by side, never write
    // into the same file.
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let writer = format!(
        "{}-{}",
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    );
    let tmp = entry.with_extension(format!("tmp{writer}"));
    let tmp_tag = entry.with_extension(format!("hmac.tmp{writer}"));
    std::fs::write(&tmp, &bytes)?;
    std::fs::write(&tmp_tag, tag)?;
    // The tag first: a reader that sees the new entry before its tag finds
    // a mismatch and recompiles, never the other way round.
    std::fs::rename(&tmp_tag, tag_path(entry))?;
    std::fs::rename(&tmp, entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_component_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.wasm");
        std::fs::write(&path, vec![0u8; 3 << 20]).unwrap();
        let err = read_component(&path, 2 << 20).unwrap_err().to_string();
        assert!(
            err.contains("3145728 bytes") && err.contains("plugins.limits.component_mib = 2 MiB"),
            "{err}"
        );
        assert_eq!(read_component(&path, 3 << 20).unwrap().len(), 3 << 20);
    }

    #[test]
    fn an_entry_lock_waits_for_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("components/x.cwasm");
        let held = lock_entry(&entry).expect("lock");
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let second = lock_entry(&entry);
            tx.send(()).unwrap();
            second.is_some()
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the waiter got the lock");
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn an_entry_tag_covers_digest_engine_and_bytes() {
        let base = entry_message("sha256:aa", 1, b"code");
        assert_ne!(base, entry_message("sha256:bb", 1, b"code"));
        assert_ne!(base, entry_message("sha256:aa", 2, b"code"));
        assert_ne!(base, entry_message("sha256:aa", 1, b"other"));
    }
}
