//! The summon shortcut through the GlobalShortcuts portal, against a fake portal on
//! a private D-Bus daemon: the same calls and signals a Wayland desktop exchanges.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cairn_desktop::portal::{self, SUMMON};

#[path = "support/fake_portal.rs"]
mod fake_portal;
#[path = "support/private_bus.rs"]
mod private_bus;

use fake_portal::FakePortal;
use private_bus::{Bus, connect};

fn wait_until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("waited 5 s for {what}");
}

#[test]
fn the_portal_binds_the_key_and_a_press_summons() {
    let bus = Bus::start();
    let fake = FakePortal::start(&bus.address, 0);
    let app = connect(&bus.address);
    assert!(portal::available(&app));

    let presses = Arc::new(AtomicUsize::new(0));
    let outcome = Arc::new(Mutex::new(None));
    let (counted, told) = (Arc::clone(&presses), Arc::clone(&outcome));
    let binding = portal::bind(
        app,
        "Ctrl+Shift+Space",
        move || {
            counted.fetch_add(1, Ordering::SeqCst);
        },
        move |result| *told.lock().unwrap() = Some(result),
    )
    .unwrap();
    wait_until("the binding", || outcome.lock().unwrap().is_some());
    assert_eq!(*outcome.lock().unwrap(), Some(Ok(())));
    assert_eq!(fake.seen.lock().unwrap().triggers, ["CTRL+SHIFT+space"]);

    fake.press("someone-else");
    fake.press(SUMMON);
    wait_until("the press", || presses.load(Ordering::SeqCst) == 1);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        presses.load(Ordering::SeqCst),
        1,
        "only our shortcut summons"
    );
    binding.close();
}

#[test]
fn a_refused_binding_says_so() {
    let bus = Bus::start();
    let _fake = FakePortal::start(&bus.address, 1);
    let outcome = Arc::new(Mutex::new(None));
    let told = Arc::clone(&outcome);
    let _binding = portal::bind(
        connect(&bus.address),
        "Ctrl+Shift+Space",
        || {},
        move |result| *told.lock().unwrap() = Some(result),
    )
    .unwrap();
    wait_until("the answer", || outcome.lock().unwrap().is_some());
    let problem = outcome.lock().unwrap().clone().unwrap().unwrap_err();
    assert_eq!(
        problem,
        portal::Unbound::Cancelled("a shortcut session".into())
    );
    assert!(problem.to_string().contains("did not allow"), "{problem}");
}

#[test]
fn a_desktop_without_the_portal_is_told_apart() {
    let bus = Bus::start();
    assert!(!portal::available(&connect(&bus.address)));
    let problem = portal::unavailable("Ctrl+Shift+Space").to_string();
    assert!(problem.contains("no global shortcuts portal"), "{problem}");
}
