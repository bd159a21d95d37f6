//! A tar handed to the daemon as a stream of chunks: bytes in one piece, a file read 1 MiB at
//! a time (large build contexts and root file systems never sit whole in memory).

use std::path::PathBuf;
use std::pin::Pin;

use futures_util::Stream;
use tokio::io::AsyncReadExt;

use crate::engine::TarSource;

/// The chunks of a tar, as the client library's request bodies take them.
pub(super) type ChunkStream = Pin<Box<dyn Stream<Item = Result<Vec<u8>, std::io::Error>> + Send>>;

/// A tar file that could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("cannot open {}: {source}", path.display())]
pub(super) struct TarOpenError {
    /// The file.
    path: PathBuf,
    /// The operating system's error.
    source: std::io::Error,
}

/// The chunks of `src`.
pub(super) async fn tar_chunks(src: TarSource) -> Result<ChunkStream, TarOpenError> {
    match src {
        TarSource::Bytes(b) => Ok(Box::pin(futures_util::stream::once(async move { Ok(b) }))),
        TarSource::File(path) => {
            let file = match tokio::fs::File::open(&path).await {
                Ok(f) => f,
                Err(source) => return Err(TarOpenError { path, source }),
            };
            Ok(Box::pin(futures_util::stream::unfold(
                Some(file),
                |file| async move {
                    let mut file = file?;
                    let mut buf = vec![0u8; 1 << 20];
                    match file.read(&mut buf).await {
                        Ok(0) => None,
                        Ok(n) => {
                            buf.truncate(n);
                            Some((Ok(buf), Some(file)))
                        }
                        Err(e) => Some((Err(e), None)),
                    }
                },
            )))
        }
    }
}
