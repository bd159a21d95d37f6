//! The two image flavours ([`Flavour`]): the official conda images, or Debian with the
//! environment frozen from a pip freeze.

use std::fmt;
use std::str::FromStr;

use super::error::SpecError;

/// How the images are built and the eval script runs in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Flavour {
    /// Conda, as the official images (online builds; official eval scripts byte for byte).
    #[default]
    Official,
    /// Debian's own Python, packages from PyPI (offline-friendly).
    Debian,
}

impl Flavour {
    /// `official` or `debian`.
    pub fn as_str(self) -> &'static str {
        match self {
            Flavour::Official => "official",
            Flavour::Debian => "debian",
        }
    }
}

impl fmt::Display for Flavour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Flavour {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        match s {
            "official" | "conda" => Ok(Flavour::Official),
            "debian" => Ok(Flavour::Debian),
            other => Err(SpecError::UnknownFlavour(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavour_parses() {
        assert_eq!("debian".parse::<Flavour>().unwrap(), Flavour::Debian);
        assert_eq!("official".parse::<Flavour>().unwrap(), Flavour::Official);
        assert!("alpine".parse::<Flavour>().is_err());
    }
}
