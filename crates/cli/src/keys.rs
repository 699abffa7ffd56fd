//! `cairn keys set|delete`: API keys go into the OS keychain and nowhere else.

use std::io::{IsTerminal, Read};

use cairn_secrets::{Keychain, SecretStore, key_name};

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
    let base = base_of(server)?;
    let name = key_name(&base);
    let keychain = Keychain::new();
    let keychain_error = |err: cairn_secrets::SecretError| Failure::Usage(err.to_string());
    if action == "delete" {
        return Ok(if keychain.delete(&name).map_err(keychain_error)? {
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
    keychain.set(&name, key.trim()).map_err(keychain_error)?;
    Ok(format!("stored the API key for {base} in the OS keychain"))
}

fn base_of(server: &ServerArgs) -> Result<String, Failure> {
    if !server.given() {
        return Err(Failure::Usage(
            "say which server the key is for, with --base-url or --provider".into(),
        ));
    }
    server
        .endpoint()?
        .normalized_base()
        .map_err(Failure::from_provider)
}
