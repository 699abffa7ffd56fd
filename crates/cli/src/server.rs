//! From flags to a model server: the runtime resolves it the way the desktop does.

use cairn_protocol::desktop::SavedEndpoint;
use cairn_runtime::{DefaultModel, Endpoint, ModelRequest, Sampling, ServerName};
use cairn_secrets::Keychain;

use crate::args::{RunArgs, ServerArgs};
use crate::exit::Failure;

impl ServerArgs {
    /// Whether the user named a server at all.
    pub fn given(&self) -> bool {
        self.name().given()
    }

    fn name(&self) -> ServerName {
        ServerName {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            dialect: self.dialect,
        }
    }

    /// Where to connect, without its key: the server named, else the default address.
    pub fn endpoint(&self) -> Result<Endpoint, Failure> {
        self.endpoint_among(&[])
    }

    /// Like [`ServerArgs::endpoint`], where `--provider` may also give the name of
    /// one of the user's `named` servers (`cairn servers list`), before a preset's id.
    pub fn endpoint_among(&self, named: &[SavedEndpoint]) -> Result<Endpoint, Failure> {
        let chosen = self
            .provider
            .as_deref()
            .and_then(|name| named.iter().find(|server| server.name == name));
        let mut endpoint = match chosen {
            Some(server) => Endpoint::new(
                self.dialect.unwrap_or(server.dialect),
                server.base_url.clone(),
            ),
            None => self.name().endpoint()?,
        };
        endpoint.idle_timeout = self.idle_timeout.map(std::time::Duration::from_secs);
        endpoint.context_cap = self.context_cap;
        Ok(endpoint)
    }

    /// The endpoint with its key (from `CAIRN_API_KEY`, else the keychain).
    pub fn endpoint_with_key(&self) -> Result<Endpoint, Failure> {
        let mut endpoint = self.endpoint()?;
        endpoint.api_key = cairn_runtime::api_key(&endpoint, given_key(), &Keychain::new())?;
        Ok(endpoint)
    }
}

impl ServerArgs {
    /// What the flags say about the server and `model`; a thread and the server say
    /// the rest. `named` are the user's servers, which `--provider` may name.
    pub fn model_request(
        &self,
        named: &[SavedEndpoint],
        model: Option<String>,
        sampling: Sampling,
    ) -> Result<ModelRequest, Failure> {
        let endpoint = self.endpoint_among(named)?;
        Ok(ModelRequest {
            server: self.given().then(|| endpoint.clone()),
            model,
            default_server: Some(endpoint),
            default_model: DefaultModel::OnlyOne,
            api_key: given_key(),
            idle_timeout: self.idle_timeout.map(std::time::Duration::from_secs),
            context_cap: self.context_cap,
            sampling,
        })
    }
}

impl RunArgs {
    /// What the flags say about the model; the thread and the server say the rest.
    pub fn model_request(&self, named: &[SavedEndpoint]) -> Result<ModelRequest, Failure> {
        let sampling = Sampling {
            temperature: self.temperature,
            ..Sampling::default()
        };
        self.server
            .model_request(named, self.model.clone(), sampling)
    }
}

/// The key in `CAIRN_API_KEY`, for scripts and machines without a keychain.
fn given_key() -> Option<String> {
    std::env::var("CAIRN_API_KEY")
        .ok()
        .filter(|key| !key.is_empty())
}
