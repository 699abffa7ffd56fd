//! The IPC commands the webview may call (the capability in
//! `src-tauri/capabilities/` grants exactly these). Each one is a thin adapter: the
//! logic and the input checks live in [`crate::desk`].
//!
//! Each handler takes its command's definition from `cairn_protocol::desktop::commands`
//! as its arguments and returns its reply. All are async so none runs on the event
//! loop's thread, but `quit_app`, which must.

use std::sync::{Arc, PoisonError};

use cairn_protocol::Event;
use cairn_protocol::desktop::commands::*;
use cairn_protocol::desktop::{
    CommandError, CommandErrorKind, PullStep, Sent, SettingsSaved, ShellEvent, Startup,
};
use cairn_runtime::LiveTurn;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::desk::{self, Desk, DeskError};
use crate::state::AppState;
use crate::{shortcut, window};

type Reply<T> = Result<T, CommandError>;

/// The first page of the sidebar.
const FIRST_PAGE: u32 = 100;

/// Registers every handler, and lists each with the command it claims to be (a test
/// holds the two to the definitions in `cairn_protocol::desktop::commands`).
macro_rules! registered {
    ($($handler:ident => $command:ty),* $(,)?) => {
        pub fn handler() -> impl Fn(tauri::ipc::Invoke) -> bool + Send + Sync + 'static {
            tauri::generate_handler![$($handler),*]
        }

        /// `(handler, the name its command is defined under)`, for every handler.
        #[cfg(test)]
        pub const REGISTERED: &[(&str, &str)] =
            &[$((stringify!($handler), <$command as Command>::NAME)),*];
    };
}

registered! {
    ui_ready => UiReady,
    send_message => SendMessage,
    attach => Attach,
    stop_turn => StopTurn,
    answer_approval => AnswerApproval,
    pending_approvals => PendingApprovals,
    running_turns => RunningTurns,
    list_threads => ListThreads,
    search_threads => SearchThreads,
    load_thread => LoadThread,
    rename_thread => RenameThread,
    delete_thread => DeleteThread,
    load_tool_result => LoadToolResult,
    server_reports => ServerReports,
    plan_restore => PlanRestore,
    restore_answer => RestoreAnswer,
    export_thread => ExportThread,
    set_mode => SetMode,
    pick_workspace => PickWorkspace,
    check_workspace => CheckWorkspace,
    set_workspace => SetWorkspace,
    get_settings => GetSettings,
    save_settings => SaveSettings,
    set_zoom => SetZoom,
    open_link => OpenLink,
    copy_text => CopyText,
    detect_providers => DetectProviders,
    list_models => ListModels,
    check_server => CheckServer,
    model_context => ModelContext,
    warm_prompt => WarmPrompt,
    pull_model => PullModel,
    set_api_key => SetApiKey,
    delete_api_key => DeleteApiKey,
    has_api_key => HasApiKey,
    list_rules => ListRules,
    add_rule => AddRule,
    remove_rule => RemoveRule,
    list_tools => ListTools,
    list_mcp_servers => ListMcpServers,
    set_mcp_server => SetMcpServer,
    list_agents => ListAgents,
    set_agent => SetAgent,
    get_llm => GetLlm,
    set_llm => SetLlm,
    thread_usage => GetThreadUsage,
    list_prices => ListPrices,
    set_price => SetPrice,
    remove_price => RemovePrice,
    run_plan => RunPlan,
    quit_app => QuitApp,
    retry_turn => RetryTurn,
    redo_turn => RedoTurn,
}

fn desk(state: &State<'_, AppState>) -> Reply<Arc<Desk>> {
    state.desk().cloned()
}

fn fail(err: DeskError) -> CommandError {
    err.into()
}

/// Sends a turn's events into the webview's channel until `done` or the webview
/// goes away (a reload): the turn itself runs on.
fn stream_to(channel: Channel<Event>, live: &LiveTurn) {
    desk::forward(live, move |event| channel.send(event).is_ok());
}

/// The webview started: it gets everything it needs to draw, and a channel for
/// what the shell has to tell it later.
#[tauri::command]
async fn ui_ready(
    state: State<'_, AppState>,
    args: UiReady,
    on_shell: Channel<ShellEvent>,
) -> Reply<<UiReady as Command>::Reply> {
    let UiReady {} = args;
    let desk = desk(&state)?;
    state.set_shell_channel(on_shell);
    let threads = desk.list_threads(0, FIRST_PAGE).await.map_err(fail)?;
    let shortcut_problem = state
        .shortcut_problem
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let tray_problem = state
        .tray_problem
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
        tray_problem,
        last_workspace: desk.last_workspace().await.map_err(fail)?,
        env_overrides: desk.env_overrides(),
    })
}

#[tauri::command]
async fn send_message(
    state: State<'_, AppState>,
    args: SendMessage,
    on_event: Channel<Event>,
) -> Reply<<SendMessage as Command>::Reply> {
    let SendMessage {
        thread_id,
        prompt,
        options,
        model,
    } = args;
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
    args: Attach,
    on_event: Channel<Event>,
) -> Reply<<Attach as Command>::Reply> {
    let Attach { thread_id } = args;
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
async fn stop_turn(
    state: State<'_, AppState>,
    args: StopTurn,
) -> Reply<<StopTurn as Command>::Reply> {
    let StopTurn { thread_id } = args;
    desk(&state)?.stop_turn(&thread_id).map_err(fail)
}

#[tauri::command]
async fn answer_approval(
    app: AppHandle,
    args: AnswerApproval,
) -> Reply<<AnswerApproval as Command>::Reply> {
    let AnswerApproval {
        approval_id,
        decision,
    } = args;
    crate::approvals::answer(&app, &approval_id, decision)
}

#[tauri::command]
async fn pending_approvals(
    state: State<'_, AppState>,
    args: PendingApprovals,
) -> Reply<<PendingApprovals as Command>::Reply> {
    let PendingApprovals {} = args;
    Ok(desk(&state)?.pending_approvals())
}

#[tauri::command]
async fn running_turns(
    state: State<'_, AppState>,
    args: RunningTurns,
) -> Reply<<RunningTurns as Command>::Reply> {
    let RunningTurns {} = args;
    Ok(desk(&state)?.running())
}

#[tauri::command]
async fn list_threads(
    state: State<'_, AppState>,
    args: ListThreads,
) -> Reply<<ListThreads as Command>::Reply> {
    let ListThreads { offset, limit } = args;
    desk(&state)?
        .list_threads(offset.unwrap_or(0), limit.unwrap_or(FIRST_PAGE))
        .await
        .map_err(fail)
}

#[tauri::command]
async fn search_threads(
    state: State<'_, AppState>,
    args: SearchThreads,
) -> Reply<<SearchThreads as Command>::Reply> {
    let SearchThreads { query } = args;
    desk(&state)?.search_threads(&query).await.map_err(fail)
}

#[tauri::command]
async fn load_thread(
    state: State<'_, AppState>,
    args: LoadThread,
) -> Reply<<LoadThread as Command>::Reply> {
    let LoadThread { thread_id } = args;
    desk(&state)?.load_thread(&thread_id).await.map_err(fail)
}

#[tauri::command]
async fn rename_thread(
    state: State<'_, AppState>,
    args: RenameThread,
) -> Reply<<RenameThread as Command>::Reply> {
    let RenameThread { thread_id, title } = args;
    desk(&state)?
        .rename_thread(&thread_id, &title)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn delete_thread(
    state: State<'_, AppState>,
    args: DeleteThread,
) -> Reply<<DeleteThread as Command>::Reply> {
    let DeleteThread { thread_id } = args;
    desk(&state)?.delete_thread(&thread_id).await.map_err(fail)
}

#[tauri::command]
async fn server_reports(
    state: State<'_, AppState>,
    args: ServerReports,
) -> Reply<<ServerReports as Command>::Reply> {
    let ServerReports {} = args;
    desk(&state)?.server_reports().await.map_err(fail)
}

#[tauri::command]
async fn load_tool_result(
    state: State<'_, AppState>,
    args: LoadToolResult,
) -> Reply<<LoadToolResult as Command>::Reply> {
    let LoadToolResult {
        message_id,
        tool_call_id,
    } = args;
    desk(&state)?
        .tool_result(&message_id, &tool_call_id)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn plan_restore(
    state: State<'_, AppState>,
    args: PlanRestore,
) -> Reply<<PlanRestore as Command>::Reply> {
    let PlanRestore {
        thread_id,
        answer_id,
    } = args;
    desk(&state)?
        .plan_restore(&thread_id, &answer_id)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn restore_answer(
    state: State<'_, AppState>,
    args: RestoreAnswer,
) -> Reply<<RestoreAnswer as Command>::Reply> {
    let RestoreAnswer {
        thread_id,
        answer_id,
    } = args;
    desk(&state)?
        .restore_answer(&thread_id, &answer_id)
        .await
        .map_err(fail)
}

/// Asks where to save the thread and writes it there. `None` if the user cancelled.
#[tauri::command]
async fn export_thread(
    app: AppHandle,
    state: State<'_, AppState>,
    args: ExportThread,
) -> Reply<<ExportThread as Command>::Reply> {
    let ExportThread { thread_id, format } = args;
    let export = desk(&state)?
        .export_thread(&thread_id, format)
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
async fn set_mode(state: State<'_, AppState>, args: SetMode) -> Reply<<SetMode as Command>::Reply> {
    let SetMode { thread_id, mode } = args;
    desk(&state)?.set_mode(&thread_id, mode).await.map_err(fail)
}

/// The system's folder picker. `None` if the user cancelled.
#[tauri::command]
async fn pick_workspace(
    app: AppHandle,
    args: PickWorkspace,
) -> Reply<<PickWorkspace as Command>::Reply> {
    let PickWorkspace {} = args;
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
async fn check_workspace(args: CheckWorkspace) -> Reply<<CheckWorkspace as Command>::Reply> {
    let CheckWorkspace { folder } = args;
    desk::check_workspace(&folder).map_err(fail)
}

/// Sets (or, with no folder, clears) a thread's workspace.
#[tauri::command]
async fn set_workspace(
    state: State<'_, AppState>,
    args: SetWorkspace,
) -> Reply<<SetWorkspace as Command>::Reply> {
    let SetWorkspace { thread_id, folder } = args;
    desk(&state)?
        .set_workspace(&thread_id, folder.as_deref())
        .await
        .map_err(fail)
}

#[tauri::command]
async fn get_settings(
    state: State<'_, AppState>,
    args: GetSettings,
) -> Reply<<GetSettings as Command>::Reply> {
    let GetSettings {} = args;
    desk(&state)?.current_settings().await.map_err(fail)
}

/// Keeps new settings and moves the summon shortcut if it changed.
#[tauri::command]
async fn save_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    args: SaveSettings,
) -> Reply<<SaveSettings as Command>::Reply> {
    let SaveSettings { settings } = args;
    let desk = desk(&state)?;
    shortcut::parse(settings.summon_shortcut.trim()).map_err(|bad| invalid(bad.to_string()))?;
    if settings.start_at_login != desk.settings().start_at_login {
        start_at_login(settings.start_at_login)?;
    }
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

/// Writes or removes the autostart entry; nothing is saved if that fails.
fn start_at_login(enabled: bool) -> Reply<()> {
    let system = |message: String| CommandError {
        message,
        kind: CommandErrorKind::System,
    };
    if enabled && let Some(problem) = crate::tray_host::problem() {
        return Err(CommandError {
            message: format!("Cairn cannot start hidden at login here: {problem}"),
            kind: CommandErrorKind::Invalid,
        });
    }
    let entry = crate::autostart::Entry::for_user()
        .ok_or_else(|| system("neither XDG_CONFIG_HOME nor HOME is set".into()))?;
    let exe = std::env::current_exe()
        .map_err(|err| system(format!("Cairn could not find its own program: {err}")))?;
    entry.apply(enabled, &exe).map_err(|err| {
        system(format!(
            "{entry} could not be {}: {err}",
            if enabled { "written" } else { "removed" }
        ))
    })
}

/// Sets and keeps the page zoom; returns the zoom now in effect.
#[tauri::command]
async fn set_zoom(
    app: AppHandle,
    state: State<'_, AppState>,
    args: SetZoom,
) -> Reply<<SetZoom as Command>::Reply> {
    let SetZoom { percent } = args;
    let settings = desk(&state)?.set_zoom(percent).await.map_err(fail)?;
    window::apply_zoom(&app, settings.zoom_percent);
    Ok(settings.zoom_percent)
}

/// Opens a link from an answer in the user's browser or mail client.
#[tauri::command]
async fn open_link(args: OpenLink) -> Reply<<OpenLink as Command>::Reply> {
    let OpenLink { url } = args;
    crate::links::open(&url).await
}

/// Puts text on the clipboard. (Not async: the clipboard belongs to the main thread.)
#[tauri::command]
fn copy_text(args: CopyText) -> Reply<<CopyText as Command>::Reply> {
    let CopyText { text } = args;
    crate::clipboard::copy(&text)
}

#[tauri::command]
async fn detect_providers(
    state: State<'_, AppState>,
    args: DetectProviders,
) -> Reply<<DetectProviders as Command>::Reply> {
    let DetectProviders {} = args;
    Ok(desk(&state)?.detect_servers().await)
}

/// A server's models: the one in Settings unless a dialect and address are given.
#[tauri::command]
async fn list_models(
    state: State<'_, AppState>,
    args: ListModels,
) -> Reply<<ListModels as Command>::Reply> {
    let ListModels { dialect, base_url } = args;
    let server = dialect.zip(base_url);
    desk(&state)?.list_models(server).await.map_err(fail)
}

/// Whether a server answers, what it offers, and a hint when its address looks like
/// the other dialect.
#[tauri::command]
async fn check_server(
    state: State<'_, AppState>,
    args: CheckServer,
) -> Reply<<CheckServer as Command>::Reply> {
    let CheckServer { dialect, base_url } = args;
    Ok(desk(&state)?.check_server(dialect, &base_url).await)
}

/// The chosen model's context window, for the model picker.
#[tauri::command]
async fn model_context(
    state: State<'_, AppState>,
    args: ModelContext,
) -> Reply<<ModelContext as Command>::Reply> {
    desk(&state)?.model_context(args).await.map_err(fail)
}

/// Has a local server read the next turn's prompt ahead of the question.
#[tauri::command]
async fn warm_prompt(
    state: State<'_, AppState>,
    args: WarmPrompt,
) -> Reply<<WarmPrompt as Command>::Reply> {
    desk(&state)?.warm_prompt(args).await.map_err(fail)
}

/// Downloads a model; progress arrives on `on_progress`, the last step says how
/// it ended.
#[tauri::command]
async fn pull_model(
    state: State<'_, AppState>,
    args: PullModel,
    on_progress: Channel<PullStep>,
) -> Reply<<PullModel as Command>::Reply> {
    let PullModel { model } = args;
    let desk = desk(&state)?;
    desk.pull_model(&model, |step| {
        let _ = on_progress.send(step);
    })
    .await;
    Ok(())
}

#[tauri::command]
async fn set_api_key(
    state: State<'_, AppState>,
    args: SetApiKey,
) -> Reply<<SetApiKey as Command>::Reply> {
    let SetApiKey { base_url, key } = args;
    let desk = desk(&state)?;
    keychain(move || desk.set_api_key(&base_url, &key)).await
}

#[tauri::command]
async fn delete_api_key(
    state: State<'_, AppState>,
    args: DeleteApiKey,
) -> Reply<<DeleteApiKey as Command>::Reply> {
    let DeleteApiKey { base_url } = args;
    let desk = desk(&state)?;
    keychain(move || desk.delete_api_key(&base_url)).await
}

#[tauri::command]
async fn has_api_key(
    state: State<'_, AppState>,
    args: HasApiKey,
) -> Reply<<HasApiKey as Command>::Reply> {
    let HasApiKey { base_url } = args;
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
async fn list_rules(
    state: State<'_, AppState>,
    args: ListRules,
) -> Reply<<ListRules as Command>::Reply> {
    let ListRules {} = args;
    desk(&state)?.list_rules().await.map_err(fail)
}

#[tauri::command]
async fn add_rule(state: State<'_, AppState>, args: AddRule) -> Reply<<AddRule as Command>::Reply> {
    let AddRule { list, rule } = args;
    desk(&state)?.add_rule(list, &rule).await.map_err(fail)
}

#[tauri::command]
async fn remove_rule(
    state: State<'_, AppState>,
    args: RemoveRule,
) -> Reply<<RemoveRule as Command>::Reply> {
    let RemoveRule { id } = args;
    desk(&state)?.remove_rule(id).await.map_err(fail)
}

#[tauri::command]
async fn list_tools(
    state: State<'_, AppState>,
    args: ListTools,
) -> Reply<<ListTools as Command>::Reply> {
    let ListTools { thread_id } = args;
    desk(&state)?
        .list_tools(thread_id.as_deref())
        .await
        .map_err(fail)
}

/// The MCP servers file the app reads, or why there is none.
fn mcp_path() -> Reply<std::path::PathBuf> {
    crate::desk::mcp::config_path()
        .ok_or_else(|| invalid("no data folder for the MCP servers file: set HOME".into()))
}

#[tauri::command]
async fn list_mcp_servers(
    state: State<'_, AppState>,
    args: ListMcpServers,
) -> Reply<<ListMcpServers as Command>::Reply> {
    let ListMcpServers {} = args;
    desk(&state)?.mcp_servers(&mcp_path()?).await.map_err(fail)
}

/// Every agent profile a chat could use (with its workspace's own), and every file
/// that could not be used, with why.
#[tauri::command]
async fn list_agents(
    state: State<'_, AppState>,
    args: ListAgents,
) -> Reply<<ListAgents as Command>::Reply> {
    let ListAgents { thread_id } = args;
    desk(&state)?
        .agents(thread_id.as_deref())
        .await
        .map_err(fail)
}

/// Gives a chat the agent it answers as from its next message on.
#[tauri::command]
async fn set_agent(
    state: State<'_, AppState>,
    args: SetAgent,
) -> Reply<<SetAgent as Command>::Reply> {
    let SetAgent { thread_id, agent } = args;
    desk(&state)?
        .set_agent(&thread_id, &agent)
        .await
        .map_err(fail)
}

/// The model's parameters for a chat (or the defaults), as `/llm` shows them.
#[tauri::command]
async fn get_llm(state: State<'_, AppState>, args: GetLlm) -> Reply<<GetLlm as Command>::Reply> {
    let GetLlm { thread_id } = args;
    desk(&state)?.llm(thread_id.as_deref()).await.map_err(fail)
}

/// What each of a chat's answers took, and its totals.
#[tauri::command]
async fn thread_usage(
    state: State<'_, AppState>,
    args: GetThreadUsage,
) -> Reply<<GetThreadUsage as Command>::Reply> {
    desk(&state)?
        .thread_usage(&args.thread_id)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn list_prices(
    state: State<'_, AppState>,
    args: ListPrices,
) -> Reply<<ListPrices as Command>::Reply> {
    let ListPrices {} = args;
    desk(&state)?.prices().await.map_err(fail)
}

#[tauri::command]
async fn set_price(
    state: State<'_, AppState>,
    args: SetPrice,
) -> Reply<<SetPrice as Command>::Reply> {
    let SetPrice {
        model,
        prompt_per_million,
        completion_per_million,
    } = args;
    desk(&state)?
        .set_price(&model, prompt_per_million, completion_per_million)
        .await
        .map_err(fail)
}

#[tauri::command]
async fn remove_price(
    state: State<'_, AppState>,
    args: RemovePrice,
) -> Reply<<RemovePrice as Command>::Reply> {
    desk(&state)?.remove_price(&args.model).await.map_err(fail)
}

/// Sets (or resets) a chat's model parameter, or a default.
#[tauri::command]
async fn set_llm(state: State<'_, AppState>, args: SetLlm) -> Reply<<SetLlm as Command>::Reply> {
    let SetLlm {
        thread_id,
        key,
        value,
    } = args;
    desk(&state)?
        .set_llm(thread_id.as_deref(), key.as_deref(), value.as_deref())
        .await
        .map_err(fail)
}

/// Allows or disallows a configured MCP server (it starts or stops at once), or
/// trusts its read-only marks or not.
#[tauri::command]
async fn set_mcp_server(
    state: State<'_, AppState>,
    args: SetMcpServer,
) -> Reply<<SetMcpServer as Command>::Reply> {
    let SetMcpServer {
        name,
        allowed,
        trusted,
    } = args;
    desk(&state)?
        .set_mcp_server(&mcp_path()?, &name, allowed, trusted)
        .await
        .map_err(fail)
}

/// Carries out a thread's plan in `mode`: its plan-mode answer, or a draft by id.
#[tauri::command]
async fn run_plan(
    state: State<'_, AppState>,
    args: RunPlan,
    on_event: Channel<Event>,
) -> Reply<<RunPlan as Command>::Reply> {
    let RunPlan {
        thread_id,
        mode,
        plan_id,
    } = args;
    let desk = desk(&state)?;
    let live = desk
        .run_plan(&thread_id, mode, plan_id.as_deref())
        .await
        .map_err(fail)?;
    stream_to(on_event, &live);
    Ok(Sent {
        question: Some(cairn_runtime::run_plan_shown(plan_id.as_deref())),
        ..desk::sent(&live)
    })
}

/// The user confirmed Quit in the window: running turns stop, what they wrote is
/// kept. (Not async: it runs on the main thread, which may wait for the commits.)
#[tauri::command]
fn quit_app(app: tauri::AppHandle, args: QuitApp) {
    let QuitApp {} = args;
    crate::window::exit(&app);
}

/// Answers a thread's last question again after its answer failed; the failed
/// answer gives way to the new one.
#[tauri::command]
async fn retry_turn(
    state: State<'_, AppState>,
    args: RetryTurn,
    on_event: Channel<Event>,
) -> Reply<<RetryTurn as Command>::Reply> {
    let RetryTurn { thread_id, model } = args;
    let desk = desk(&state)?;
    let live = desk.retry(&thread_id, model).await.map_err(fail)?;
    stream_to(on_event, &live);
    Ok(desk.sent_again(&live).await)
}

/// Answers a thread's last question again (Regenerate), or as rewritten (Edit and
/// resend); its last answer gives way to the new one.
#[tauri::command]
async fn redo_turn(
    state: State<'_, AppState>,
    args: RedoTurn,
    on_event: Channel<Event>,
) -> Reply<<RedoTurn as Command>::Reply> {
    let RedoTurn {
        thread_id,
        question,
        model,
    } = args;
    let redo = match question.as_deref() {
        Some(text) => cairn_runtime::Redo::Edited(text),
        None => cairn_runtime::Redo::Answer,
    };
    let desk = desk(&state)?;
    let live = desk.redo(&thread_id, redo, model).await.map_err(fail)?;
    stream_to(on_event, &live);
    Ok(desk.sent_again(&live).await)
}

fn invalid(message: String) -> CommandError {
    CommandError {
        message,
        kind: CommandErrorKind::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::REGISTERED;

    #[test]
    fn every_registered_handler_is_a_defined_command_and_every_command_is_registered() {
        for (handler, defined) in REGISTERED {
            assert_eq!(
                handler, defined,
                "a handler registered under another command's name"
            );
        }
        let registered: BTreeSet<&str> = REGISTERED.iter().map(|(handler, _)| *handler).collect();
        let defined: BTreeSet<&str> = cairn_protocol::desktop::commands::ALL
            .iter()
            .copied()
            .collect();
        assert_eq!(registered, defined);
        assert_eq!(
            registered.len(),
            REGISTERED.len(),
            "a handler registered twice"
        );
    }

    /// Tauri's build writes a permission file per command and never removes one: a
    /// command renamed or dropped would leave a permission for nothing behind.
    #[test]
    fn the_permission_files_are_the_defined_commands() {
        let folder =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("permissions/autogenerated");
        let files: BTreeSet<String> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".toml").map(str::to_owned)
            })
            .collect();
        let defined: BTreeSet<String> = cairn_protocol::desktop::commands::ALL
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        assert_eq!(files, defined, "in {}", folder.display());
    }

    #[test]
    fn the_window_may_call_exactly_the_defined_commands() {
        let capability: serde_json::Value =
            serde_json::from_str(include_str!("capabilities/main.json")).unwrap_or_default();
        let granted: BTreeSet<String> = capability["permissions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|permission| permission.as_str())
            .map(str::to_owned)
            .collect();
        let defined: BTreeSet<String> = cairn_protocol::desktop::commands::ALL
            .iter()
            .map(|name| format!("allow-{}", name.replace('_', "-")))
            .collect();
        assert_eq!(granted, defined);
    }
}
