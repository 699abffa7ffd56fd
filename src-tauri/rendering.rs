//! How WebKit paints the page. With a GPU, WebKit's default (Skia on the GPU) is best.
//! Without one, that GPU is Mesa's llvmpipe: every shader Skia needs is compiled by LLVM
//! on the CPU, in the web process, and the pixels still come from the CPU. Skia's own
//! CPU rasterizer does the same work without that layer: on this machine (no GPU) the
//! first screen came 18% sooner, 500 tool cards drew 11% faster and the app idled
//! 23 MiB smaller (README "Benchmarks → The desktop app").
//!
//! `WEBKIT_SKIA_ENABLE_CPU_RENDERING` is WebKitGTK's switch (any value but `0` turns
//! it on); a value the user set is kept, so `=0` brings the GPU path back.
//!
//! Compositing stays on, though the layers are still composited through llvmpipe (about
//! 30 ms of CPU a frame here). `WEBKIT_DISABLE_COMPOSITING_MODE=1` measured 52 MiB less
//! at idle and a long streamed answer at 1.6 s of CPU instead of about 6, but in that mode
//! a web process once aborted in Skia ("SkRuntimeEffectPriv.h:204: fatal error",
//! compiling a blur shader) as the page was drawn, a blank window for a user: one launch
//! in about 220, against none in the thousands composited (README "Streaming").

use std::path::Path;

/// WebKitGTK reads it when each web process starts.
const CPU_RENDERING: &str = "WEBKIT_SKIA_ENABLE_CPU_RENDERING";

/// Where the kernel lists GPUs' render nodes (`renderD128`, …).
const DRI: &str = "/dev/dri";

/// Asks WebKit for CPU rendering when this machine has no GPU and the user did not
/// choose. Must run before any thread starts: it changes the process environment,
/// which the web processes inherit.
#[allow(unsafe_code)]
pub fn prefer_cpu_without_gpu() {
    if std::env::var_os(CPU_RENDERING).is_some() || machine_has_gpu() {
        return;
    }
    // SAFETY: called first thing in `main` (through `run`), while the process has one
    // thread; nothing reads the environment concurrently.
    unsafe { std::env::set_var(CPU_RENDERING, "1") };
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
}
