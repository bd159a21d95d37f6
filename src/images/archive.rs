//! A set of images as one archive (`docker save` format: each layer once, however many of
//! the images share it), written atomically and zstd-compressed when asked, and loaded into
//! another daemon.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::sync::mpsc;

use crate::engine::{Engine, EngineError};

/// Why an archive could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The daemon failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The archive file could not be written.
    #[error(transparent)]
    Write(#[from] swe_eval_core::fsutil::WriteError),
    /// The archive file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing to put in it.
    #[error("no image of the selection is on the daemon: nothing to export (build them with `swe-eval images build`)")]
    Empty,
    /// The archive file exists, and writing over it was not asked for.
    #[error("{} exists: give --force to write over it", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// The archive could not be decompressed to its end: it is cut short or damaged.
    #[error("{} is truncated or corrupt: {source}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The decompressor's error.
        source: std::io::Error,
    },
    /// The daemon read the archive's tar to an unexpected end: it is cut short or damaged.
    #[error("{} is truncated or corrupt: {source}", path.display())]
    CutShort {
        /// The file.
        path: PathBuf,
        /// What the daemon said.
        source: EngineError,
    },
}

impl swe_eval_core::failure::Classify for ArchiveError {
    fn kind(&self) -> swe_eval_core::failure::ErrorKind {
        use swe_eval_core::failure::ErrorKind;
        match self {
            ArchiveError::Engine(e) => e.kind(),
            ArchiveError::Write(e) => e.kind(),
            // An archive path that names nothing: the command line asked for it.
            ArchiveError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::Usage
            }
            ArchiveError::Read { .. } => ErrorKind::Failed,
            ArchiveError::Empty => ErrorKind::NothingComputable,
            // The command line named a file it did not say may be replaced.
            ArchiveError::Exists { .. } => ErrorKind::Usage,
            ArchiveError::Corrupt { .. } | ArchiveError::CutShort { .. } => ErrorKind::Failed,
        }
    }
}

/// An archive written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveReport {
    /// The images in it (exported: the names given; imported: the names loaded).
    pub images: Vec<String>,
    /// The archive file's size in bytes.
    pub bytes: u64,
    /// Time taken.
    pub took: Duration,
}

/// True when `path` names a zstd-compressed archive (`.zst`, `.tzst`).
fn zstd_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == "zst" || e == "zstd" || e == "tzst")
}

/// Whether an archive may be written at `path`: not over an existing file unless `force`.
pub fn may_write_archive(path: &Path, force: bool) -> Result<(), ArchiveError> {
    match !force && path.symlink_metadata().is_ok() {
        true => Err(ArchiveError::Exists {
            path: path.to_path_buf(),
        }),
        false => Ok(()),
    }
}

/// Writes `names` (images on the daemon) to one archive at `path` in `docker save` format,
/// each layer once however many images share it; zstd-compressed when `path` ends in `.zst`.
/// An existing file is written over only when `force` is set ([`may_write_archive`]). Written
/// atomically: a failure leaves no partial archive.
pub async fn export_images<E: Engine>(
    engine: &E,
    names: &[String],
    path: &Path,
    force: bool,
) -> Result<ArchiveReport, ArchiveError> {
    may_write_archive(path, force)?;
    if names.is_empty() {
        return Err(ArchiveError::Empty);
    }
    let started = Instant::now();
    let mut stream = engine.save_images(names);
    // The file is written on a blocking thread, fed piece by piece (bounded: the archive
    // never sits in memory).
    let (tx, rx) = std::sync::mpsc::sync_channel::<bytes::Bytes>(8);
    let (target, compress) = (path.to_path_buf(), zstd_path(path));
    let writer = tokio::task::spawn_blocking(move || {
        swe_eval_core::fsutil::write_atomic_with(&target, |file| {
            use std::io::Write;
            let mut sink: Box<dyn Write> = if compress {
                Box::new(zstd::Encoder::new(&mut *file, 3)?.auto_finish())
            } else {
                Box::new(std::io::BufWriter::with_capacity(1 << 20, &mut *file))
            };
            let mut got = 0u64;
            for chunk in rx {
                got += chunk.len() as u64;
                sink.write_all(&chunk)?;
            }
            sink.flush()?;
            drop(sink);
            if got == 0 {
                return Err(std::io::Error::other("the daemon sent nothing"));
            }
            Ok(())
        })
    });
    let mut failed = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(c) => {
                if tx.send(c).is_err() {
                    break;
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if let Some(e) = failed {
        // The writer must not keep what came before the failure.
        drop(tx);
        let _ = writer.await;
        let _ = std::fs::remove_file(path);
        return Err(e.into());
    }
    drop(tx);
    let bytes = writer
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
    Ok(ArchiveReport {
        images: names.to_vec(),
        bytes,
        took: started.elapsed(),
    })
}

/// Loads the archive at `path` (as [`export_images`] writes it, zstd-compressed or not; or
/// any `docker save` archive, also gzip-compressed) into the daemon.
pub async fn import_images<E: Engine>(
    engine: &E,
    path: &Path,
) -> Result<ArchiveReport, ArchiveError> {
    let started = Instant::now();
    let read_err = |source| ArchiveError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(read_err)?;
    let bytes = file.metadata().map_err(read_err)?.len();
    let mut magic = [0u8; 4];
    let is_zstd = {
        use std::io::{Read, Seek};
        let n = file.read(&mut magic).map_err(read_err)?;
        file.rewind().map_err(read_err)?;
        n == 4 && magic == [0x28, 0xb5, 0x2f, 0xfd]
    };
    // Read (and decompressed) on a blocking thread, handed to the daemon piece by piece. A
    // read that fails (a compressed archive cut short) is kept: the daemon's side of it is
    // only a broken request.
    let (tx, rx) = mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(8);
    let read_failed = std::sync::Arc::new(std::sync::Mutex::new(None::<std::io::Error>));
    let failed = read_failed.clone();
    let reader = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let fail = |e: std::io::Error| {
            let copy = std::io::Error::new(e.kind(), e.to_string());
            *failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            let _ = tx.blocking_send(Err(copy));
        };
        let mut source: Box<dyn Read> = if is_zstd {
            match zstd::Decoder::new(file) {
                Ok(d) => Box::new(d),
                Err(e) => return fail(e),
            }
        } else {
            Box::new(file)
        };
        loop {
            let mut buf = vec![0u8; 1 << 20];
            match source.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    if tx.blocking_send(Ok(buf.into())).is_err() {
                        return;
                    }
                }
                Err(e) => return fail(e),
            }
        }
    });
    let archive = tokio_stream_of(rx);
    let loaded = engine.load_images(archive).await;
    reader.abort();
    let read_failed = read_failed.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(source) = read_failed {
        return Err(ArchiveError::Corrupt {
            path: path.to_path_buf(),
            source,
        });
    }
    let loaded = loaded.map_err(|e| match e {
        // The daemon's tar reader met the end of an archive cut short.
        EngineError::Load { ref message } if message.contains("unexpected EOF") => {
            ArchiveError::CutShort {
                path: path.to_path_buf(),
                source: e,
            }
        }
        e => ArchiveError::Engine(e),
    })?;
    Ok(ArchiveReport {
        images: loaded,
        bytes,
        took: started.elapsed(),
    })
}

/// A receiver as a stream of an archive's pieces.
fn tokio_stream_of(
    rx: mpsc::Receiver<Result<bytes::Bytes, std::io::Error>>,
) -> crate::engine::ByteStream<std::io::Error> {
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}
