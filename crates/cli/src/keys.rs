//! `cairn keys set|delete`: API keys go into the OS keychain and nowhere else.

use std::io::{IsTerminal, Read};

use cairn_runtime::{Endpoint, delete_api_key, set_api_key};
use cairn_secrets::Keychain;

use crate::args::{KeysAction, KeysArgs, ServerArgs};
use crate::exit::{Exit, Failure};

pub fn keys(args: KeysArgs) -> Exit {
    match run(args) {
        Ok(message) => {
            println!("{message}");
            Exit::OK
        }
        Err(failure) => failure.report(),
    }
}

fn run(args: KeysArgs) -> Result<String, Failure> {
    let (action, server) = match &args.action {
        KeysAction::Set(server) => ("set", server),
        KeysAction::Delete(server) => ("delete", server),
    };
    let endpoint = endpoint_of(server)?;
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

/// The server named, its address as keys are kept under it.
fn endpoint_of(server: &ServerArgs) -> Result<Endpoint, Failure> {
    if !server.given() {
        return Err(Failure::Usage(
            "say which server the key is for, with --base-url or --provider".into(),
        ));
    }
    let mut endpoint = server.endpoint()?;
    endpoint.base_url = endpoint
        .normalized_base()
        .map_err(cairn_runtime::RuntimeError::from)?;
    Ok(endpoint)
}
