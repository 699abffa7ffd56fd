//! An empty Leptos page.

use leptos::prelude::*;

fn main() {
    leptos::mount::mount_to_body(|| view! { <main><p>"Empty"</p></main> });
}
