//! The app's wiring: plugins, state, and what happens at start and at quit. The one
//! module that knows every other.

use std::sync::{Arc, PoisonError};

use cairn_protocol::Event;
use cairn_protocol::desktop::ShellEvent;
use cairn_runtime::{Limits, Runtime};
use cairn_secrets::Keychain;
use tauri::{AppHandle, Manager, RunEvent, WindowEvent};

use crate::desk::{Desk, Overrides, Shell};
#[cfg(target_os = "linux")]
use crate::single_instance;
use crate::state::AppState;
use crate::{approvals, commands, notify, shortcut, tray, window};

/// The desk's view of the desktop: notifications, the tray, the webview.
struct DesktopShell {
    app: AppHandle,
}

impl Shell for DesktopShell {
    fn turn_event(&self, thread_id: &str, title: &str, event: &Event) {
        let state = self.app.state::<AppState>();
        match event {
            Event::ToolApprovalRequest(request) => {
                notify::approval_needed(&self.app, thread_id, title, request);
            }
            Event::Done(done) => notify::turn_finished(&self.app, thread_id, title, done.status),
            // A long prompt being read shows in the tooltip while it is read.
            Event::PromptProgress(progress) if progress.depth == 0 => {
                let running = state.desk().map(|desk| desk.running().len()).unwrap_or(0);
                tray::show_reading(&self.app, title, progress, running);
                return;
            }
            _ => return,
        }
        if let Ok(desk) = state.desk() {
            approvals::changed(&self.app, desk);
        }
    }

    fn running_changed(&self, running: &[String]) {
        tray::show_running(&self.app, running.len());
        self.app.state::<AppState>().tell(ShellEvent::Running {
            threads: running.to_vec(),
        });
    }
}

/// Runs the app with its generated context (the embedded UI and the config). Call it
/// first in `main`: it sets up the environment the web processes inherit while the
/// process still has one thread.
pub fn run(context: tauri::Context) {
    crate::rendering::prefer_cpu_without_gpu();
    crate::jit::baseline_tiers_only();
    init_logging();
    let builder = tauri::Builder::default();
    // First, so a second launch is stopped before it opens anything.
    #[cfg(target_os = "linux")]
    let builder = builder.plugin(single_instance::plugin());
    #[cfg(not(target_os = "linux"))]
    let builder = builder.plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
        window::summon(app);
    }));
    let app = builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(shortcut::plugin())
        .manage(AppState::new())
        .manage(notify::Notifications::new(approvals::answer))
        .invoke_handler(commands::handler())
        .setup(|app| {
            let handle = app.handle().clone();
            let desk = tauri::async_runtime::block_on(open_desk(handle.clone()))?;
            let state = app.state::<AppState>();
            let settings = desk.settings();
            state.open(Arc::clone(&desk))?;
            tray::create(&handle)?;
            *state
                .tray_problem
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = crate::tray_host::problem();
            shortcut::register(&handle, None, &settings.summon_shortcut);
            window::restore(&handle, &desk);
            window::apply_zoom(&handle, settings.zoom_percent);
            start_mcp(handle, desk);
            Ok(())
        })
        .on_window_event(|window, event| {
            if let WindowEvent::CloseRequested { api, .. } = event {
                window::close_requested(window, api);
            }
        })
        .build(context);
    let app = match app {
        Ok(app) => app,
        Err(err) => {
            tracing::error!(error = %err, "Cairn could not start");
            eprintln!("cairn: Cairn could not start: {err}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        if let RunEvent::ExitRequested { api, code, .. } = &event {
            // An exit the user did not confirm (the last window closed) while turns
            // run: keep running in the tray.
            let state = app.state::<AppState>();
            let confirmed = state.quitting.load(std::sync::atomic::Ordering::SeqCst);
            if code.is_none() && !confirmed {
                api.prevent_exit();
            }
        }
        if let RunEvent::Exit = event {
            window::save_geometry(app);
        }
    });
}

/// Starts the allowed MCP servers in the background (a slow one must not hold up the
/// window); what fails is told to the user once the webview listens.
fn start_mcp(app: AppHandle, desk: Arc<Desk>) {
    let Some(path) = crate::desk::mcp::config_path() else {
        return;
    };
    tauri::async_runtime::spawn(async move {
        for problem in desk.start_mcp(&path).await {
            tracing::warn!(%problem, "MCP");
            app.state::<AppState>()
                .tell(ShellEvent::Notice { message: problem });
        }
    });
}

async fn open_desk(app: AppHandle) -> Result<Arc<Desk>, Box<dyn std::error::Error>> {
    let path = match std::env::var_os("CAIRN_DB") {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            cairn_runtime::default_database_path().ok_or("no data folder: set HOME or CAIRN_DB")?
        }
    };
    let runtime = Runtime::open(&path, Limits::from_env()?).await?;
    let shell = Arc::new(DesktopShell { app });
    let desk = Desk::open(
        runtime,
        Arc::new(Keychain::new()),
        shell,
        &Overrides::from_env(),
    )
    .await?;
    Ok(desk)
}

fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let spec = std::env::var(cairn_runtime::LOG_VARIABLE).ok();
    let (filter, problem) = cairn_runtime::log_filter(spec.as_deref());
    // Plain text: the app is mostly started from a menu, and colours would cost the
    // binary their formatting code.
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
    if let Some(problem) = problem {
        tracing::warn!("{problem}");
    }
}
