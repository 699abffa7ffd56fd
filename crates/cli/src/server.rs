//! From flags to a connected model server, its API key looked up in the keychain.

use cairn_providers::{Dialect, Endpoint, Server};
use cairn_secrets::{Keychain, SecretStore, key_name};

use crate::args::ServerArgs;
use crate::exit::Failure;

pub const DEFAULT_BASE_URL: &str = "http://localhost:11434";

impl ServerArgs {
    /// Whether the user named a server at all.
    pub fn given(&self) -> bool {
        self.provider.is_some() || self.base_url.is_some()
    }

    /// Where to connect, without its key.
    pub fn endpoint(&self) -> Result<Endpoint, Failure> {
        let (base_url, preset_dialect) = match &self.provider {
            Some(id) => {
                let preset = cairn_providers::server::preset(id).ok_or_else(|| {
                    let known: Vec<_> = cairn_providers::PRESETS.iter().map(|p| p.id).collect();
                    Failure::Usage(format!(
                        "unknown provider `{id}`: use one of {}",
                        known.join(", ")
                    ))
                })?;
                (preset.base_url.to_owned(), Some(preset.dialect))
            }
            None => (
                self.base_url
                    .clone()
                    .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
                None,
            ),
        };
        let dialect = self
            .dialect
            .or(preset_dialect)
            .unwrap_or_else(|| Endpoint::guess_dialect(&base_url));
        let mut endpoint = Endpoint::new(dialect, base_url);
        endpoint.idle_timeout = self.idle_timeout.map(std::time::Duration::from_secs);
        endpoint.context_cap = self.context_cap;
        Ok(endpoint)
    }

    /// The endpoint with its key (from `CAIRN_API_KEY`, else the keychain), connected.
    pub fn connect(&self) -> Result<Server, Failure> {
        let mut endpoint = self.endpoint()?;
        endpoint.api_key = api_key(&endpoint)?;
        Server::connect(&endpoint).map_err(Failure::from_provider)
    }
}

fn api_key(endpoint: &Endpoint) -> Result<Option<String>, Failure> {
    if let Ok(key) = std::env::var("CAIRN_API_KEY")
        && !key.is_empty()
    {
        return Ok(Some(key));
    }
    if endpoint.dialect == Dialect::Ollama {
        return Ok(None);
    }
    let base = endpoint.normalized_base().map_err(Failure::from_provider)?;
    match Keychain::new().get(&key_name(&base)) {
        Ok(key) => Ok(key),
        Err(err) => {
            // A local server needs no key; say why one could not be read only if
            // someone looks.
            tracing::debug!(error = %err, "no API key from the keychain");
            Ok(None)
        }
    }
}
