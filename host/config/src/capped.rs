//! Reading a file the user or a config names, safely: only a plain file is
//! read (a FIFO, a device or a socket is refused by its type before a byte
//! is read, and opening one never blocks), and never more than a cap (the
//! size is checked before reading, and again while reading, for a file that
//! grows). Data grants, plugin components and `plugin check` read through it.

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

/// Reads `path` whole if it is a plain file of at most `max_bytes`.
pub fn read_capped(path: &Path, max_bytes: u64) -> Result<Vec<u8>, CappedReadError> {
    // O_NONBLOCK: opening a FIFO with no writer returns at once instead of
    // waiting for one (and reads of a plain file ignore the flag).
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let len = plain_len(&file)?;
    if len > max_bytes {
        return Err(CappedReadError::TooLarge(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(CappedReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// The length of the opened `file`, if it is a plain file.
fn plain_len(file: &File) -> Result<u64, CappedReadError> {
    let meta = file.metadata()?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(meta.len());
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
    } else {
        "special file"
    };
    Err(CappedReadError::NotAFile(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_without_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // Without O_NONBLOCK this open would wait forever for a writer.
        let err = read_capped(&fifo, 1 << 20).unwrap_err();
        assert!(matches!(err, CappedReadError::NotAFile("FIFO")), "{err}");
    }

    #[test]
    fn a_device_is_refused_without_reading_it() {
        // /dev/zero reports length 0 and never ends: read, it would fill the cap.
        let err = read_capped(Path::new("/dev/zero"), 256 << 20).unwrap_err();
        assert!(
            matches!(err, CappedReadError::NotAFile("character device")),
            "{err}"
        );
        let err = read_capped(Path::new("/"), 1).unwrap_err();
        assert!(
            matches!(err, CappedReadError::NotAFile("directory")),
            "{err}"
        );
    }

    #[test]
    fn a_plain_file_is_read_up_to_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_capped(&path, 5).unwrap(), b"12345");
        assert!(matches!(
            read_capped(&path, 4),
            Err(CappedReadError::TooLarge(5))
        ));
    }
}
