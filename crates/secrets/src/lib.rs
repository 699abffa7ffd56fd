//! API keys in the OS keychain, and nowhere else.
//!
//! One named secret per provider endpoint ([`key_name`]). Keys are read when a
//! client is built and passed to it; they never reach the database, logs, events or
//! tool results. When there is no keychain, storing a key fails with an error that
//! says so: Cairn never falls back to plain text.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

/// Where secrets live.
pub trait SecretStore: Send + Sync + fmt::Debug {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError>;
    fn set(&self, name: &str, secret: &str) -> Result<(), SecretError>;
    /// Removes a secret; `false` if there was none.
    fn delete(&self, name: &str) -> Result<bool, SecretError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error(
        "no keychain is available ({0}). Cairn keeps API keys only in the OS keychain: on \
         Linux start and unlock a Secret Service such as GNOME Keyring or KWallet"
    )]
    Unavailable(String),
    #[error("the keychain refused: {0}")]
    Refused(String),
    #[error("an empty API key cannot be stored")]
    Empty,
}

/// The secret name for an endpoint's API key.
pub fn key_name(base_url: &str) -> String {
    format!("api-key {}", base_url.trim_end_matches('/'))
}

/// The OS keychain (the Secret Service on Linux).
#[derive(Debug, Clone)]
pub struct Keychain {
    service: String,
}

impl Keychain {
    pub const SERVICE: &'static str = "cairn";

    pub fn new() -> Self {
        Self::with_service(Self::SERVICE)
    }

    /// A keychain under another service name (tests keep theirs apart).
    pub fn with_service(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    fn entry(&self, name: &str) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(&self.service, name).map_err(map_error)
    }
}

impl Default for Keychain {
    fn default() -> Self {
        Self::new()
    }
}

impl SecretStore for Keychain {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        match self.entry(name)?.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(err) => Err(map_error(err)),
        }
    }

    fn set(&self, name: &str, secret: &str) -> Result<(), SecretError> {
        if secret.trim().is_empty() {
            return Err(SecretError::Empty);
        }
        self.entry(name)?.set_password(secret).map_err(map_error)
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        match self.entry(name)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(err) => Err(map_error(err)),
        }
    }
}

fn map_error(err: keyring::Error) -> SecretError {
    match err {
        keyring::Error::NoStorageAccess(inner) | keyring::Error::PlatformFailure(inner) => {
            SecretError::Unavailable(inner.to_string())
        }
        other => SecretError::Refused(other.to_string()),
    }
}

/// Secrets in memory: for tests, and never for real keys.
#[derive(Debug, Default)]
pub struct MemoryStore {
    secrets: Mutex<HashMap<String, String>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.secrets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SecretStore for MemoryStore {
    fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        Ok(self.lock().get(name).cloned())
    }

    fn set(&self, name: &str, secret: &str) -> Result<(), SecretError> {
        if secret.trim().is_empty() {
            return Err(SecretError::Empty);
        }
        self.lock().insert(name.to_owned(), secret.to_owned());
        Ok(())
    }

    fn delete(&self, name: &str) -> Result<bool, SecretError> {
        Ok(self.lock().remove(name).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_per_endpoint() {
        assert_eq!(
            key_name("https://api.example.com/"),
            "api-key https://api.example.com"
        );
        assert_ne!(key_name("http://a:1"), key_name("http://a:2"));
    }

    #[test]
    fn the_memory_store_behaves_like_a_keychain() {
        let store = MemoryStore::new();
        assert_eq!(store.get("k"), Ok(None));
        assert_eq!(store.set("k", "  "), Err(SecretError::Empty));
        store.set("k", "sk-1").unwrap();
        assert_eq!(store.get("k"), Ok(Some("sk-1".into())));
        assert_eq!(store.delete("k"), Ok(true));
        assert_eq!(store.delete("k"), Ok(false));
    }
}
