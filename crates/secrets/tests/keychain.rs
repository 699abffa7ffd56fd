//! Round trips through the real OS keychain. Ignored by a plain `cargo test` (a
//! developer's machine may have no unlocked keychain); `scripts/test` runs them
//! inside a private D-Bus session with GNOME Keyring unlocked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use cairn_secrets::{Keychain, SecretStore, key_name};

#[test]
#[ignore = "needs an unlocked Secret Service; scripts/test provides one"]
fn a_key_round_trips_through_the_os_keychain() {
    let keychain = Keychain::with_service(format!("cairn-test-{}", std::process::id()));
    let name = key_name("https://api.example.com");
    assert_eq!(keychain.get(&name).unwrap(), None);
    keychain.set(&name, "sk-test-secret").unwrap();
    assert_eq!(
        keychain.get(&name).unwrap().as_deref(),
        Some("sk-test-secret")
    );
    // A second instance (a later process) sees it: it is in the keychain, not here.
    let again = Keychain::with_service(format!("cairn-test-{}", std::process::id()));
    assert_eq!(again.get(&name).unwrap().as_deref(), Some("sk-test-secret"));
    keychain.set(&name, "sk-replaced").unwrap();
    assert_eq!(keychain.get(&name).unwrap().as_deref(), Some("sk-replaced"));
    assert!(keychain.delete(&name).unwrap());
    assert_eq!(keychain.get(&name).unwrap(), None);
    assert!(!keychain.delete(&name).unwrap());
}
