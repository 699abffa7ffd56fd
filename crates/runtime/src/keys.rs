//! API keys: kept in the OS keychain under a name made from the server's address,
//! the same name [`crate::api_key`] reads them back by.

use cairn_providers::Endpoint;
use cairn_secrets::{SecretStore, key_name};

use crate::RuntimeError;

/// The keychain entry of `endpoint`'s key.
pub(crate) fn entry(endpoint: &Endpoint) -> Result<String, RuntimeError> {
    Ok(key_name(&endpoint.normalized_base()?))
}

/// Keeps the key of the server at `endpoint`; a blank key is refused.
pub fn set_api_key(
    secrets: &dyn SecretStore,
    endpoint: &Endpoint,
    key: &str,
) -> Result<(), RuntimeError> {
    Ok(secrets.set(&entry(endpoint)?, key.trim())?)
}

/// Forgets the key of the server at `endpoint` (false: there was none).
pub fn delete_api_key(
    secrets: &dyn SecretStore,
    endpoint: &Endpoint,
) -> Result<bool, RuntimeError> {
    Ok(secrets.delete(&entry(endpoint)?)?)
}

pub fn has_api_key(secrets: &dyn SecretStore, endpoint: &Endpoint) -> Result<bool, RuntimeError> {
    Ok(secrets.get(&entry(endpoint)?)?.is_some())
}
