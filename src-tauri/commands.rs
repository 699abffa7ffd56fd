//! The IPC commands the webview may call (the capability in
//! `src-tauri/capabilities/` grants exactly these). Each one is a thin adapter: the
//! logic and the input checks live in [`crate::desk`].
//!
//! All are async so none runs on the event loop's thread.

use std::sync::{Arc, PoisonError};

use cairn_protocol::desktop::{
    CommandError, CommandErrorKind, DetectedServer, NewThreadOptions, PendingApproval, PullStep,
    RuleInfo, Sent, Settings, SettingsSaved, ShellEvent, Startup, ThreadDetail, ToolInfo,
};
use cairn_protocol::{ApprovalDecision, Event, PermissionMode, SearchHit, ThreadInfo};
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::app::AppState;
use crate::desk::{self, Desk, DeskError};
use crate::{shortcut, window};

type Reply<T> = Result<T, CommandError>;

/// The first page of the sidebar.
const FIRST_PAGE: u32 = 100;

pub fn handler() -> impl Fn(tauri::ipc::Invoke) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        ui_ready,
        send_message,
        attach,
        stop_turn,
        answer_approval,
        pending_approvals,
        running_turns,
        list_threads,
        search_threads,
        load_thread,
        rename_thread,
        delete_thread,
        export_thread,
        set_mode,
        pick_workspace,
        check_workspace,
        set_workspace,
        get_settings,
        save_settings,
        set_zoom,
        open_link,
        retry_turn,
        detect_providers,
        list_models,
        pull_model,
        set_api_key,
        delete_api_key,
        has_api_key,
        list_rules,
        add_rule,
        remove_rule,
        list_tools,
        run_plan,
    ]
}

fn desk(state: &State<'_, AppState>) -> Reply<Arc<Desk>> {
    state.desk().cloned()
}

fn fail(err: DeskError) -> CommandError {
    err.into()
}

/// Sends a turn's events into the webview's channel until `done` or the webview
/// goes away (a reload): the turn itself runs on.
fn stream_to(channel: Channel<Event>, live: &cairn_core::LiveTurn) {
    desk::forward(live, move |event| channel.send(event).is_ok());
}

/// The webview started: it gets everything it needs to draw, and a channel for
/// what the shell has to tell it later.
#[tauri::command]
async fn ui_ready(state: State<'_, AppState>, on_shell: Channel<ShellEvent>) -> Reply<Startup> {
    let desk = desk(&state)?;
    state.set_shell_channel(on_shell);
    let threads = desk.list_threads(0, FIRST_PAGE).await.map_err(fail)?;
    let shortcut_problem = state
        .shortcut_problem
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Ok(Startup {
        settings: desk.settings(),
        presets: desk::presets(),
        threads,
        running: desk.running(),
        pending: desk.pending_approvals(),
        shortcut_problem,
    })
}

#[tauri::command]
async fn send_message(
    state: State<'_, AppState>,
    thread_id: Option<String>,
    prompt: String,
    options: Option<NewThreadOptions>,
    model: Option<String>,
    on_event: Channel<Event>,
) -> Reply<Sent> {
    let desk = desk(&state)?;
    let live = desk
        .send_message(
            thread_id.as_deref(),
            &prompt,
            options.unwrap_or_default(),
            model,
        )
        .await
        .map_err(fail)?;
    stream_to(on_event, &live);
    Ok(desk::sent(&live))
}

/// Follows a thread's running turn from its start. `false` when none is running.
#[tauri::command]
async fn attach(
    state: State<'_, AppState>,
    thread_id: String,
    on_event: Channel<Event>,
) -> Reply<bool> {
    let desk = desk(&state)?;
    Ok(match desk.live_turn(&thread_id) {
        Some(live) => {
            stream_to(on_event, &live);
            true
        }
        None => false,
    })
}

#[tauri::command]
async fn stop_turn(state: State<'_, AppState>, thread_id: String) -> Reply<()> {
    desk(&state)?.stop_turn(&thread_id).map_err(fail)
}

#[tauri::command]
async fn answer_approval(
    state: State<'_, AppState>,
    approval_id: String,
    decision: ApprovalDecision,
) -> Reply<()> {
    let desk = desk(&state)?;
    desk.answer_approval(&approval_id, decision).map_err(fail)?;
    state.tell(ShellEvent::Pending {
        approvals: desk.pending_approvals(),
    });
    Ok(())
}

#[tauri::command]
async fn pending_approvals(state: State<'_, AppState>) -> Reply<Vec<PendingApproval>> {
    Ok(desk(&state)?.pending_approvals())
}

#[tauri::command]
async fn running_turns(state: State<'_, AppState>) -> Reply<Vec<String>> {
    Ok(desk(&state)?.running())
}

#[tauri::command]
async fn list_threads(
    state: State<'_, AppState>,
    offset: Option<u32>,
    limit: Option<u32>,
) -> Reply<Vec<ThreadInfo>> {
    desk(&state)?
        .list_threads(offset.unwrap_or(0), limit.unwrap_or(FIRST_PAGE))
        .await
        .map_err(fail)
}

#[tauri::command]
async fn search_threads(state: State<'_, AppState>, query: String) -> Reply<Vec<SearchHit>> {
    desk(&state)?.search_threads(&query).await.map_err(fail)
}

#[tauri::command]
async fn load_thread(state: State<'_, AppState>, thread_id: String) -> Reply<ThreadDetail> {
    desk(&state)?.load_thread(&thread_id).await.map_err(fail)
}

#[tauri::command]
async fn rename_thread(
    state: State<'_, AppState>,
    thread_id: String,
    title: String,
) -> Reply<ThreadInfo> {
    desk(&state)?
        .rename_thread(&thread_id, &title)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn delete_thread(state: State<'_, AppState>, thread_id: String) -> Reply<()> {
    desk(&state)?.delete_thread(&thread_id).await.map_err(fail)
}

/// Asks where to save the thread and writes it there. `None` if the user cancelled.
#[tauri::command]
async fn export_thread(
    app: AppHandle,
    state: State<'_, AppState>,
    thread_id: String,
    format: String,
) -> Reply<Option<String>> {
    let export = desk(&state)?
        .export_thread(&thread_id, &format)
        .await
        .map_err(fail)?;
    let (sender, receiver) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_title("Export chat")
        .set_file_name(&export.file_name)
        .save_file(move |path| {
            let _ = sender.send(path);
        });
    let Some(path) = receiver.await.ok().flatten() else {
        return Ok(None);
    };
    let path = path
        .into_path()
        .map_err(|err| invalid(format!("that place cannot be written: {err}")))?;
    tokio::fs::write(&path, export.contents.as_bytes())
        .await
        .map_err(|err| invalid(format!("{} could not be written: {err}", path.display())))?;
    Ok(Some(path.display().to_string()))
}

#[tauri::command]
async fn set_mode(
    state: State<'_, AppState>,
    thread_id: String,
    mode: PermissionMode,
) -> Reply<ThreadInfo> {
    desk(&state)?.set_mode(&thread_id, mode).await.map_err(fail)
}

/// The system's folder picker. `None` if the user cancelled.
#[tauri::command]
async fn pick_workspace(app: AppHandle) -> Reply<Option<String>> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    app.dialog()
        .file()
        .set_title("Choose the folder this chat works in")
        .pick_folder(move |folder| {
            let _ = sender.send(folder);
        });
    let Some(folder) = receiver.await.ok().flatten() else {
        return Ok(None);
    };
    let folder = folder
        .into_path()
        .map_err(|err| invalid(format!("that folder cannot be used: {err}")))?;
    Ok(Some(folder.display().to_string()))
}

/// Whether a folder can be a workspace (for a chat not started yet).
#[tauri::command]
async fn check_workspace(folder: String) -> Reply<String> {
    desk::check_workspace(&folder).map_err(fail)
}

/// Sets (or, with no folder, clears) a thread's workspace.
#[tauri::command]
async fn set_workspace(
    state: State<'_, AppState>,
    thread_id: String,
    folder: Option<String>,
) -> Reply<ThreadInfo> {
    desk(&state)?
        .set_workspace(&thread_id, folder.as_deref())
        .await
        .map_err(fail)
}

#[tauri::command]
async fn get_settings(state: State<'_, AppState>) -> Reply<Settings> {
    Ok(desk(&state)?.settings())
}

/// Keeps new settings and moves the summon shortcut if it changed.
#[tauri::command]
async fn save_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    settings: Settings,
) -> Reply<SettingsSaved> {
    let desk = desk(&state)?;
    shortcut::parse(settings.summon_shortcut.trim()).map_err(invalid)?;
    let old = desk.settings().summon_shortcut;
    let settings = desk.save_settings(settings).await.map_err(fail)?;
    let shortcut_problem = if old == settings.summon_shortcut {
        state
            .shortcut_problem
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    } else {
        shortcut::register(&app, Some(&old), &settings.summon_shortcut)
    };
    Ok(SettingsSaved {
        settings,
        shortcut_problem,
    })
}

/// Sets and keeps the page zoom; returns the zoom now in effect.
#[tauri::command]
async fn set_zoom(app: AppHandle, state: State<'_, AppState>, percent: u16) -> Reply<u16> {
    let settings = desk(&state)?.set_zoom(percent).await.map_err(fail)?;
    window::apply_zoom(&app, settings.zoom_percent);
    Ok(settings.zoom_percent)
}

/// Opens a link from an answer in the user's browser or mail client.
#[tauri::command]
fn open_link(url: String) -> Reply<()> {
    crate::links::open(&url)
}

#[tauri::command]
async fn detect_providers(state: State<'_, AppState>) -> Reply<Vec<DetectedServer>> {
    Ok(desk(&state)?.detect_servers().await)
}

/// A server's models: the one in Settings unless a dialect and address are given.
#[tauri::command]
async fn list_models(
    state: State<'_, AppState>,
    dialect: Option<String>,
    base_url: Option<String>,
) -> Reply<Vec<String>> {
    let server = dialect.zip(base_url);
    desk(&state)?.list_models(server).await.map_err(fail)
}

/// Downloads a model; progress arrives on `on_progress`, the last step says how
/// it ended.
#[tauri::command]
async fn pull_model(
    state: State<'_, AppState>,
    model: String,
    on_progress: Channel<PullStep>,
) -> Reply<()> {
    let desk = desk(&state)?;
    desk.pull_model(&model, |step| {
        let _ = on_progress.send(step);
    })
    .await;
    Ok(())
}

#[tauri::command]
async fn set_api_key(state: State<'_, AppState>, base_url: String, key: String) -> Reply<()> {
    let desk = desk(&state)?;
    keychain(move || desk.set_api_key(&base_url, &key)).await
}

#[tauri::command]
async fn delete_api_key(state: State<'_, AppState>, base_url: String) -> Reply<bool> {
    let desk = desk(&state)?;
    keychain(move || desk.delete_api_key(&base_url)).await
}

#[tauri::command]
async fn has_api_key(state: State<'_, AppState>, base_url: String) -> Reply<bool> {
    let desk = desk(&state)?;
    keychain(move || desk.has_api_key(&base_url)).await
}

/// The keychain answers over D-Bus and may wait for an unlock prompt: off the
/// async workers.
async fn keychain<T: Send + 'static>(
    call: impl FnOnce() -> Result<T, DeskError> + Send + 'static,
) -> Reply<T> {
    tauri::async_runtime::spawn_blocking(call)
        .await
        .map_err(|err| invalid(format!("the keychain call failed: {err}")))?
        .map_err(fail)
}

#[tauri::command]
async fn list_rules(state: State<'_, AppState>) -> Reply<Vec<RuleInfo>> {
    desk(&state)?.list_rules().await.map_err(fail)
}

#[tauri::command]
async fn add_rule(state: State<'_, AppState>, list: String, rule: String) -> Reply<RuleInfo> {
    desk(&state)?.add_rule(&list, &rule).await.map_err(fail)
}

#[tauri::command]
async fn remove_rule(state: State<'_, AppState>, id: i64) -> Reply<()> {
    desk(&state)?.remove_rule(id).await.map_err(fail)
}

#[tauri::command]
async fn list_tools(state: State<'_, AppState>, thread_id: Option<String>) -> Reply<Vec<ToolInfo>> {
    desk(&state)?
        .list_tools(thread_id.as_deref())
        .await
        .map_err(fail)
}

/// Carries out a plan-mode thread's plan in `mode`.
#[tauri::command]
async fn run_plan(
    state: State<'_, AppState>,
    thread_id: String,
    mode: PermissionMode,
    on_event: Channel<Event>,
) -> Reply<Sent> {
    let desk = desk(&state)?;
    let live = desk.run_plan(&thread_id, mode).await.map_err(fail)?;
    stream_to(on_event, &live);
    Ok(desk::sent(&live))
}

/// Answers a thread's last question again after its answer failed; the failed
/// answer gives way to the new one.
#[tauri::command]
async fn retry_turn(
    state: State<'_, AppState>,
    thread_id: String,
    on_event: Channel<Event>,
) -> Reply<Sent> {
    let desk = desk(&state)?;
    let live = desk.retry(&thread_id).await.map_err(fail)?;
    stream_to(on_event, &live);
    Ok(desk::sent(&live))
}

fn invalid(message: String) -> CommandError {
    CommandError {
        message,
        kind: CommandErrorKind::Invalid,
    }
}
