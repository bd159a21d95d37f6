//! Images as one archive in `docker save` format: saved (streamed out) and loaded (streamed
//! in), each returning or reporting the names it holds.

use bollard::errors::Error as DockerError;
use bollard::query_parameters::ImportImageOptionsBuilder;
use futures_util::StreamExt;

use super::engine::DockerEngine;
use crate::engine::{ByteStream, EngineError};

impl DockerEngine {
    /// The images `names` as one archive (each layer once), streamed.
    pub(super) fn save_images(&self, names: &[String]) -> ByteStream<EngineError> {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Box::pin(self.docker.export_images(&names).map(|r| {
            r.map_err(|e| EngineError::Save {
                message: e.to_string(),
            })
        }))
    }

    /// Loads an archive in `docker save` format; returns the names it loaded.
    pub(super) async fn load_images(
        &self,
        archive: ByteStream<std::io::Error>,
    ) -> Result<Vec<String>, EngineError> {
        let opts = ImportImageOptionsBuilder::default().quiet(true).build();
        let mut stream = self.docker.import_image_stream(opts, archive, None);
        let mut loaded = Vec::new();
        while let Some(item) = stream.next().await {
            let info = item.map_err(|e| EngineError::Load {
                message: match e {
                    DockerError::DockerStreamError { error } => error,
                    other => other.to_string(),
                },
            })?;
            // `Loaded image: NAME` (or `Loaded image ID: sha256:...` for an untagged one).
            for line in info.stream.as_deref().unwrap_or("").lines() {
                if let Some(name) = line.strip_prefix("Loaded image: ") {
                    loaded.push(name.trim().to_string());
                } else if let Some(id) = line.strip_prefix("Loaded image ID: ") {
                    loaded.push(id.trim().to_string());
                }
            }
        }
        Ok(loaded)
    }
}
