//! The key that authenticates compiled-code cache entries: 32 random bytes
//! in a file outside the cache directory (`$AGENTLOAD_CACHE_KEY`, else
//! `$XDG_CONFIG_HOME/agentload/cache.key`, else
//! `~/.config/agentload/cache.key`), created on first use, readable by its
//! owner only. Whoever can write the cache directory but not read this
//! file cannot make an entry the host will load.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::{Path, PathBuf};

/// An HMAC-SHA256 key for cache entries.
#[derive(Clone)]
pub struct CacheKey([u8; 32]);

impl std::fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheKey(..)")
    }
}

impl CacheKey {
    /// The key for caching in `cache_dir`, read or created; none (caching
    /// off, with a warning) when it cannot be had or would live inside the
    /// cache directory itself.
    pub fn for_cache(cache_dir: &Path) -> Option<Self> {
        let path = key_path()?;
        match Self::load_or_create(&path, cache_dir) {
            Ok(key) => Some(key),
            Err(e) => {
                agentload_console::line(&format!(
                    "warning: compiled-code cache off: cache key {}: {e}",
                    path.display()
                ));
                None
            }
        }
    }

    fn load_or_create(path: &Path, cache_dir: &Path) -> std::io::Result<Self> {
        let parent = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent)?;
        if let (Ok(key_dir), Ok(cache)) = (parent.canonicalize(), cache_dir.canonicalize()) {
            if key_dir.starts_with(&cache) {
                return Err(std::io::Error::other(format!(
                    "it is inside the cache directory {}, which must not hold its own key",
                    cache.display()
                )));
            }
        }
        if let Some(key) = Self::read(path)? {
            return Ok(key);
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        // Written aside, then linked into place: two processes creating the
        // key at once end up with the same one.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        write_private(&tmp, hex::encode(bytes).as_bytes())?;
        let linked = std::fs::hard_link(&tmp, path);
        std::fs::remove_file(&tmp)?;
        match linked {
            Ok(()) => Ok(Self(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Self::read(path)?
                .ok_or_else(|| std::io::Error::other("created by another process, then gone")),
            Err(e) => Err(e),
        }
    }

    fn read(path: &Path) -> std::io::Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let bytes = hex::decode(text.trim())
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| std::io::Error::other("not 64 hex digits"))?;
        Ok(Some(Self(bytes)))
    }

    /// The hex tag of `message`.
    pub fn tag(&self, message: &[u8]) -> String {
        hex::encode(self.mac(message).finalize().into_bytes())
    }

    /// Whether `tag` (hex) is `message`'s tag (compared in constant time).
    pub fn verify(&self, message: &[u8], tag: &str) -> bool {
        hex::decode(tag).is_ok_and(|t| self.mac(message).verify_slice(&t).is_ok())
    }

    fn mac(&self, message: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(message);
        mac
    }
}

fn key_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTLOAD_CACHE_KEY") {
        return Some(PathBuf::from(path));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("agentload").join("cache.key"))
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231 test case 2 ("Jefe"), through the same `Hmac<Sha256>`.
    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        let mut mac = Hmac::<Sha256>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_key_is_created_once_and_tags_verify_only_their_message() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let path = dir.path().join("config/cache.key");
        let key = CacheKey::load_or_create(&path, &cache).unwrap();
        let again = CacheKey::load_or_create(&path, &cache).unwrap();
        assert_eq!(key.0, again.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "owner only: {mode:o}");
        }
        let tag = key.tag(b"component A");
        assert!(key.verify(b"component A", &tag));
        assert!(!key.verify(b"component B", &tag));
        assert!(!key.verify(b"component A", "00"));
        assert!(!key.verify(b"component A", "not hex"));
        let other = CacheKey([7; 32]);
        assert!(!other.verify(b"component A", &tag));
    }

    #[test]
    fn a_key_inside_the_cache_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = CacheKey::load_or_create(&dir.path().join("keys/cache.key"), dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("inside the cache directory"), "{err}");
    }
}
