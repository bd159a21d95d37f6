//! The HTTP status of a daemon's error answer (404: no such object, 409: a conflict), the one
//! thing the adapter tells errors apart by.

use bollard::errors::Error as DockerError;

/// The status code of the daemon's answer, when `e` is one.
pub(in crate::engine) fn status_of(e: &DockerError) -> Option<u16> {
    match e {
        DockerError::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}
