//! How WebKit paints the page. With a GPU, WebKit's defaults (Skia on the GPU, the
//! page's layers composited there) are best. Without one, that GPU is Mesa's
//! llvmpipe, and both jobs land on the CPU through a layer that costs more than the
//! work: every shader Skia and the compositor need is compiled by LLVM in the web
//! process, and each frame is composited over the whole window (about 30 ms of CPU a
//! frame here). So on a machine with no render node Cairn asks WebKit for two things
//! (README "Benchmarks → The desktop app" has the figures):
//!
//! - Skia's own CPU rasterizer (`WEBKIT_SKIA_ENABLE_CPU_RENDERING`): the first screen
//!   came 18% sooner, 500 tool cards drew 11% faster, the app idled 23 MiB smaller.
//! - No compositing (`WEBKIT_DISABLE_COMPOSITING_MODE`): the page is painted where it
//!   changed and handed to GTK, with no frame composited through llvmpipe. A long
//!   streamed answer cost the web process about 6 s of CPU with compositing and 1.6 s
//!   without, the finished page the same; the app idled 52 MiB smaller.
//!
//! Without compositing the page is painted on the web process's main thread. A blur
//! makes Skia compile a shader there, and Skia reads a stray `errno` as a broken
//! shader and aborts the page. On that thread `errno` can change under it, most
//! likely through the signal JavaScriptCore's collector pauses the thread with. So
//! the page draws nothing blurred (`--shadow` in `ui/styles.css`), and every
//! end-to-end test fails if the page's main thread compiles a shader
//! (`tests/e2e/sksl_spy.c`).
//!
//! A value the user set is kept, so `WEBKIT_SKIA_ENABLE_CPU_RENDERING=0` or
//! `WEBKIT_DISABLE_COMPOSITING_MODE=0` brings WebKit's own choice back.

use std::ffi::OsString;
use std::path::Path;

/// The switches WebKitGTK reads when each web process starts, and the value that
/// turns each on, for a machine without a GPU.
pub const WEBKIT_SWITCHES_WITHOUT_GPU: [(&str, &str); 2] = [
    ("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1"),
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
];

/// Where the kernel lists GPUs' render nodes (`renderD128`, …).
const DRI: &str = "/dev/dri";

/// Sets WebKit up for the CPU when this machine has no GPU, leaving alone what the user
/// chose. Must run before any thread starts: it changes the process environment,
/// which the web processes inherit.
#[allow(unsafe_code)]
pub fn prefer_cpu_without_gpu() {
    for (name, value) in switches(machine_has_gpu(), |name| std::env::var_os(name)) {
        // SAFETY: called first thing in `main` (through `run`), while the process has
        // one thread; nothing reads the environment concurrently.
        unsafe { std::env::set_var(name, value) };
    }
}

/// The switches to set, given whether there is a GPU and how to read a variable.
fn switches(
    has_gpu: bool,
    read: impl Fn(&str) -> Option<OsString>,
) -> Vec<(&'static str, &'static str)> {
    if has_gpu {
        return Vec::new();
    }
    WEBKIT_SWITCHES_WITHOUT_GPU
        .into_iter()
        .filter(|(name, _)| read(name).is_none())
        .collect()
}

/// Whether this machine has a GPU to render with, as the app decides it (the end-to-end
/// test of the web process's settings asks the same question).
pub fn machine_has_gpu() -> bool {
    has_render_node(Path::new(DRI))
}

/// Whether `dri` lists a render node, the device a GPU renders through.
fn has_render_node(dri: &Path) -> bool {
    std::fs::read_dir(dri).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with("renderD"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_node_means_a_gpu() {
        let dri = tempfile::tempdir().unwrap();
        std::fs::write(dri.path().join("card0"), "").unwrap();
        assert!(
            !has_render_node(dri.path()),
            "a display card alone renders nothing"
        );
        std::fs::write(dri.path().join("renderD128"), "").unwrap();
        assert!(has_render_node(dri.path()));
    }

    #[test]
    fn no_dri_folder_means_no_gpu() {
        let dri = tempfile::tempdir().unwrap();
        assert!(!has_render_node(&dri.path().join("dri")));
    }

    #[test]
    fn without_a_gpu_both_switches_are_set_unless_the_user_chose() {
        assert_eq!(switches(false, |_| None), WEBKIT_SWITCHES_WITHOUT_GPU);
        let composites =
            |name: &str| (name == "WEBKIT_DISABLE_COMPOSITING_MODE").then(|| OsString::from("0"));
        assert_eq!(
            switches(false, composites),
            [("WEBKIT_SKIA_ENABLE_CPU_RENDERING", "1")]
        );
    }

    #[test]
    fn with_a_gpu_webkit_keeps_its_own_choice() {
        assert!(switches(true, |_| None).is_empty());
    }
}
