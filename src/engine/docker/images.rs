//! Images on the daemon: found, imported from a root file system, named, pulled, pushed,
//! removed (never forced), described (size, history, labels) and listed by label.

use std::collections::BTreeMap;

use bollard::errors::Error as DockerError;
use bollard::query_parameters::{
    CreateImageOptionsBuilder, ListImagesOptionsBuilder, PushImageOptionsBuilder,
    RemoveImageOptionsBuilder, TagImageOptionsBuilder,
};
use futures_util::StreamExt;

use super::engine::DockerEngine;
use super::filters::{has_labels, label_filters, listing_failed};
use super::status::status_of;
use super::tar_stream::tar_chunks;
use crate::engine::{EngineError, HistoryStep, ImageDetails, Resource, TarSource};

/// `repo` and `tag` of an image name, as the daemon's API takes them: a colon after the last
/// slash separates the tag (one before it is a registry's port); no tag is `latest`; a digest
/// reference is the whole name with no tag.
pub(in crate::engine) fn split_tag(image: &str) -> (&str, &str) {
    // A digest reference is pulled whole; bollard then sends no tag.
    if image.contains('@') {
        return (image, "");
    }
    // A colon after the last slash separates the tag; one before it is a registry port.
    match image.rfind(':') {
        Some(i) if !image[i..].contains('/') => (&image[..i], &image[i + 1..]),
        _ => (image, "latest"),
    }
}

/// Quotes a label key or value for a Dockerfile `LABEL` instruction.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl DockerEngine {
    /// Whether an image named `image` is present.
    pub(super) async fn image_exists(&self, image: &str) -> Result<bool, EngineError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(e) if status_of(&e) == Some(404) => Ok(false),
            Err(e) => Err(EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            }),
        }
    }

    /// Imports a root file system (a tar, in memory or on disk) as image `tag`, with `labels`,
    /// a shell as its command and `LANG=C.UTF-8`.
    pub(super) async fn import_image(
        &self,
        tag: &str,
        rootfs_tar: impl Into<TarSource> + Send,
        labels: BTreeMap<String, String>,
    ) -> Result<(), EngineError> {
        // Dockerfile instructions applied on import: labels, and a shell as default command.
        let mut changes: Vec<String> = labels
            .iter()
            .map(|(k, v)| format!("LABEL {}={}", quote(k), quote(v)))
            .collect();
        changes.push("CMD [\"/bin/bash\"]".into());
        changes.push("ENV LANG=C.UTF-8".into());
        // The whole name in `repo`, as the docker CLI sends it: Podman ignores `tag` on an
        // import (it stored `docker.io/<repo>:latest`, and no build found the base).
        let opts = CreateImageOptionsBuilder::default()
            .from_src("-")
            .repo(tag)
            .changes(changes)
            .build();
        let mut stream = self.docker.create_image(
            Some(opts),
            Some(bollard::body_try_stream(
                tar_chunks(rootfs_tar.into())
                    .await
                    .map_err(|e| EngineError::Import {
                        tag: tag.into(),
                        message: e.to_string(),
                    })?
                    .map(|r| r.map(Into::into)),
            )),
            None,
        );
        // The stream's last status is the new image's id (`sha256:...`) on both engines.
        let mut id = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(s) = info.status.filter(|s| s.starts_with("sha256:")) {
                        id = Some(s);
                    }
                }
                Err(e) => {
                    return Err(EngineError::Import {
                        tag: tag.into(),
                        message: e.to_string(),
                    })
                }
            }
        }
        // Checked, not assumed: an engine that stored the image under another name gets the
        // one asked for from the id, or the import fails here rather than every build later.
        if !self.image_exists(tag).await? {
            match id {
                Some(id) => self.tag_image(&id, tag).await?,
                None => {
                    return Err(EngineError::Import {
                        tag: tag.into(),
                        message: "the engine imported the file system but stored no image of \
                                  that name, and gave no image id"
                            .into(),
                    })
                }
            }
        }
        Ok(())
    }

    /// Gives an existing image another name (`repo:tag`).
    pub(super) async fn tag_image(&self, image: &str, new_name: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(new_name);
        let opts = TagImageOptionsBuilder::default()
            .repo(repo)
            .tag(tag)
            .build();
        self.docker
            .tag_image(image, Some(opts))
            .await
            .map_err(|e| EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            })
    }

    /// Pulls `image` from its registry.
    pub(super) async fn pull_image(&self, image: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(image);
        let opts = CreateImageOptionsBuilder::default()
            .from_image(repo)
            .tag(tag)
            .build();
        let mut stream = self.docker.create_image(Some(opts), None, None);
        while let Some(item) = stream.next().await {
            if let Err(e) = item {
                return Err(EngineError::Pull {
                    image: image.into(),
                    message: e.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Pushes `image` to the registry its name starts with.
    pub(super) async fn push_image(&self, image: &str) -> Result<(), EngineError> {
        let (repo, tag) = split_tag(image);
        let opts = PushImageOptionsBuilder::default().tag(tag).build();
        let mut stream = self.docker.push_image(repo, Some(opts), None);
        while let Some(item) = stream.next().await {
            item.map_err(|e| EngineError::Push {
                image: image.into(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Removes the name `image`, never forced: an image a container uses is
    /// [`EngineError::ImageInUse`]; an absent one is no error.
    pub(super) async fn remove_image(&self, image: &str) -> Result<(), EngineError> {
        // Not forced: forcing would untag an image another run's containers still start from.
        let opts = RemoveImageOptionsBuilder::default().force(false).build();
        match self.docker.remove_image(image, Some(opts), None).await {
            Ok(_) => Ok(()),
            Err(e) if status_of(&e) == Some(404) => Ok(()),
            Err(e) if status_of(&e) == Some(409) => Err(EngineError::ImageInUse {
                image: image.into(),
                message: e.to_string(),
            }),
            Err(e) => Err(EngineError::Image {
                image: image.into(),
                message: e.to_string(),
            }),
        }
    }

    /// The image `image` as the daemon describes it; `None` when it is not there.
    pub(super) async fn image_details(
        &self,
        image: &str,
    ) -> Result<Option<ImageDetails>, EngineError> {
        let err = |e: DockerError| EngineError::Image {
            image: image.into(),
            message: e.to_string(),
        };
        let inspected = match self.docker.inspect_image(image).await {
            Ok(i) => i,
            Err(e) if status_of(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        let history = match self.docker.image_history(image).await {
            Ok(h) => h,
            Err(e) if status_of(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(err(e)),
        };
        Ok(Some(ImageDetails {
            id: inspected.id.unwrap_or_default(),
            size: inspected.size.unwrap_or(0).max(0) as u64,
            // The daemon gives the newest step first.
            history: history
                .into_iter()
                .rev()
                .map(|h| HistoryStep {
                    created: h.created,
                    created_by: h.created_by,
                    size: h.size.max(0) as u64,
                })
                .collect(),
            labels: inspected
                .config
                .and_then(|c| c.labels)
                .unwrap_or_default()
                .into_iter()
                .collect(),
        }))
    }

    /// Images carrying all of `labels`, one resource per name.
    pub(super) async fn list_images(
        &self,
        labels: BTreeMap<String, String>,
    ) -> Result<Vec<Resource>, EngineError> {
        // Podman 4.3 lists no image for two label filters or more (containers are fine): it
        // is asked for the first, and the rest are checked here.
        let asked = match self.podman {
            Some(_) => labels
                .iter()
                .take(1)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            None => labels.clone(),
        };
        let filters = label_filters(&asked);
        let opts = ListImagesOptionsBuilder::default()
            .filters(&filters)
            .build();
        let list = self
            .docker
            .list_images(Some(opts))
            .await
            .map_err(listing_failed("images"))?;
        Ok(list
            .into_iter()
            .filter(|i| has_labels(&i.labels, &labels))
            // One resource per name, so a caller finds (and removes) an image by any of its tags.
            .flat_map(|i| {
                let labels: BTreeMap<String, String> = i.labels.into_iter().collect();
                let names = if i.repo_tags.is_empty() || i.repo_tags == ["<none>:<none>"] {
                    vec![i.id.clone()]
                } else {
                    i.repo_tags
                };
                names.into_iter().map(move |name| Resource {
                    id: i.id.clone(),
                    name: self.read_name(name),
                    labels: labels.clone(),
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_split_after_the_last_slash() {
        assert_eq!(split_tag("a/b:1"), ("a/b", "1"));
        assert_eq!(
            split_tag("127.0.0.1:5000/x/y"),
            ("127.0.0.1:5000/x/y", "latest")
        );
        assert_eq!(
            split_tag("127.0.0.1:5000/x/y:t"),
            ("127.0.0.1:5000/x/y", "t")
        );
        assert_eq!(split_tag("ubuntu"), ("ubuntu", "latest"));
        assert_eq!(split_tag("r/x@sha256:ab"), ("r/x@sha256:ab", ""));
    }

    #[test]
    fn label_values_are_quoted() {
        assert_eq!(quote(r#"a "b" \c"#), r#""a \"b\" \\c""#);
    }
}
