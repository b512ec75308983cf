//! Reading a file safely: only a plain file is read (a FIFO, a device, a
//! socket or a folder is refused by its type before a byte is read, and
//! opening one never blocks), optionally never more than a cap (checked
//! before reading, and again while reading, for a file that grows). Links are
//! followed: it is the file they lead to whose type is checked.
//!
//! The functions mirror `std::fs`'s and return [`std::io::Error`]s, so a
//! caller's error handling stays as it was: a refused type is an error of
//! kind [`std::io::ErrorKind::InvalidInput`] whose text says what the file
//! is.

use std::fs::{File, OpenOptions};
use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum CappedReadError {
    /// Opening or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// Not a plain file.
    #[error("it is a {0}, not a plain file: refused before reading")]
    NotAFile(&'static str),
    /// Over the cap (bytes found so far).
    #[error("it is {0} bytes, over the limit")]
    TooLarge(u64),
}

impl From<CappedReadError> for std::io::Error {
    fn from(e: CappedReadError) -> Self {
        match e {
            CappedReadError::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other.to_string()),
        }
    }
}

/// Opens `path` for reading if it is a plain file; anything else is refused
/// at once (a FIFO without a writer too: it is opened without blocking).
pub fn open(path: impl AsRef<Path>) -> std::io::Result<File> {
    Ok(open_plain(path.as_ref())?.0)
}

/// `std::fs::read`, for plain files only.
pub fn read(path: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
    read_capped(path.as_ref(), u64::MAX).map_err(Into::into)
}

/// `std::fs::read_to_string`, for plain files only.
pub fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Reads `path` whole if it is a plain file of at most `max_bytes`.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Vec<u8>, CappedReadError> {
    let (file, len) = open_plain(path)?;
    if len > max_bytes {
        return Err(CappedReadError::TooLarge(len));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(CappedReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The opened plain file at `path` and its length.
fn open_plain(path: &Path) -> Result<(File, u64), CappedReadError> {
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of
    // waiting for one (and reads of a plain file ignore the flag). O_NOCTTY: a
    // terminal device never becomes this process's controlling terminal.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(open_flags())
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if kind.is_file() {
        return Ok((file, meta.len()));
    }
    Err(CappedReadError::NotAFile(describe(kind)))
}

fn open_flags() -> i32 {
    use rustix::fs::OFlags;
    (OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32
}

/// What a file that is not a plain file is, in words.
pub(crate) fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_file() {
        "plain file"
    } else if kind.is_dir() {
        "directory"
    } else if kind.is_fifo() {
        "FIFO"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let fifo = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        fifo
    }

    #[test]
    fn a_fifo_is_refused_at_once_without_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = fifo(dir.path());
        // Without O_NONBLOCK this open would wait forever for a writer.
        let err = read_capped(&fifo, 1 << 20).unwrap_err();
        assert!(matches!(err, CappedReadError::NotAFile("FIFO")), "{err}");
        let err = read_to_string(&fifo).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("FIFO, not a plain file"), "{err}");
        assert!(open(&fifo).is_err());
    }

    #[test]
    fn a_device_is_refused_without_reading_it() {
        // /dev/zero reports length 0 and never ends: read, it would fill the cap.
        let err = read_capped(Path::new("/dev/zero"), 256 << 20).unwrap_err();
        assert!(
            matches!(err, CappedReadError::NotAFile("character device")),
            "{err}"
        );
        let err = read(Path::new("/dev/zero")).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        let err = read_capped(Path::new("/"), 1).unwrap_err();
        assert!(
            matches!(err, CappedReadError::NotAFile("directory")),
            "{err}"
        );
    }

    #[test]
    fn a_plain_file_is_read_up_to_its_cap_and_a_missing_one_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_capped(&path, 5).unwrap(), b"12345");
        assert!(matches!(
            read_capped(&path, 4),
            Err(CappedReadError::TooLarge(5))
        ));
        assert_eq!(read_to_string(&path).unwrap(), "12345");
        let missing = read(dir.path().join("none")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
