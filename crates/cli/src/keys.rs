//! `cairn keys set|delete`: API keys go into the OS keychain and nowhere else.

use std::io::{IsTerminal, Read};

use cairn_protocol::desktop::SavedEndpoint;
use cairn_runtime::{Endpoint, delete_api_key, set_api_key};
use cairn_secrets::Keychain;

use crate::args::{KeysAction, KeysArgs, ServerArgs};
use crate::exit::{Exit, Failure};

pub async fn keys(args: KeysArgs) -> Exit {
    match run(args).await {
        Ok(message) => {
            println!("{message}");
            Exit::OK
        }
        Err(failure) => failure.report(),
    }
}

async fn run(args: KeysArgs) -> Result<String, Failure> {
    let (action, server) = match &args.action {
        KeysAction::Set(server) => ("set", server),
        KeysAction::Delete(server) => ("delete", server),
    };
    // A name that is no preset may be one of the user's servers: only then is the
    // database read.
    let named = match server.provider.as_deref() {
        Some(name)
            if cairn_runtime::PRESETS
                .iter()
                .all(|preset| preset.id != name) =>
        {
            args.db.open().await?.servers().await?
        }
        _ => Vec::new(),
    };
    let endpoint = endpoint_of(server, &named)?;
    let base = &endpoint.base_url;
    let keychain = Keychain::new();
    if action == "delete" {
        return Ok(if delete_api_key(&keychain, &endpoint)? {
            format!("deleted the API key for {base}")
        } else {
            format!("there was no API key for {base}")
        });
    }
    if std::io::stdin().is_terminal() {
        eprintln!("Paste the API key for {base} and press Enter, then Ctrl-D:");
    }
    let mut key = String::new();
    std::io::stdin()
        .read_to_string(&mut key)
        .map_err(|err| Failure::Usage(format!("could not read the key from stdin: {err}")))?;
    set_api_key(&keychain, &endpoint, &key)?;
    Ok(format!("stored the API key for {base} in the OS keychain"))
}

/// The server named (a preset, one of the user's `named` servers, or an address), its
/// address as keys are kept under it.
fn endpoint_of(server: &ServerArgs, named: &[SavedEndpoint]) -> Result<Endpoint, Failure> {
    if !server.given() {
        return Err(Failure::Usage(
            "say which server the key is for, with --base-url or --provider".into(),
        ));
    }
    let mut endpoint = server.endpoint_among(named)?;
    endpoint.base_url = endpoint
        .normalized_base()
        .map_err(cairn_runtime::RuntimeError::from)?;
    Ok(endpoint)
}
