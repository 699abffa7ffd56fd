//! The Leptos view (written next).
