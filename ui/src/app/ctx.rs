//! The state the screens share, split by what it is about: where the user is
//! ([`Nav`]), the chats ([`Chats`]), the open chat and its composer ([`Chat`]), and
//! what the app is configured with ([`Config`]). Each part is a bundle of signals, so
//! a screen reads only the part it draws and an update wakes only its readers.

use cairn_protocol::desktop::{PendingApproval, ProviderPreset, Settings};
use cairn_protocol::{AgentInfo, Handover, PermissionMode, ThreadInfo, ThreadUsage};
use leptos::prelude::*;

use crate::turn::TurnView;

/// What [`Nav::open_menu`] holds while the open chat's header menu is open (no
/// thread id looks like it).
pub const HEAD_MENU: &str = "chat-head";

/// Which screen the main area shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Loading,
    FirstRun,
    Chat,
    Settings,
}

/// One line of the thread view.
#[derive(Debug, Clone)]
pub enum EntryView {
    User {
        id: String,
        text: String,
    },
    Assistant {
        id: String,
        turn: ArcRwSignal<TurnView>,
    },
    /// Said by the app (slash command output); never stored.
    Notice {
        id: String,
        text: String,
    },
    /// A message Cairn wrote for the next agent when the router handed the chat over:
    /// a divider naming the hand-over, then the message, marked as not the user's.
    Handover {
        id: String,
        handover: Option<Handover>,
        text: String,
    },
}

impl EntryView {
    pub fn id(&self) -> String {
        match self {
            Self::User { id, .. }
            | Self::Assistant { id, .. }
            | Self::Notice { id, .. }
            | Self::Handover { id, .. } => id.clone(),
        }
    }
}

/// The options of a chat that has not started yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    pub mode: PermissionMode,
    pub workspace: Option<String>,
    /// The agent picked for it; the default one (Settings) when none.
    pub agent: Option<String>,
}

/// Where the user is: the screen, the panels and menus open, what the app says.
#[derive(Debug, Clone, Copy)]
pub struct Nav {
    pub screen: RwSignal<Screen>,
    pub sidebar_open: RwSignal<bool>,
    /// In a narrow window (small, or zoomed in) the chats cover the thread: shown only
    /// when asked for, and put away once a chat is chosen.
    pub narrow_sidebar: RwSignal<bool>,
    /// The `⋯` menu open: a chat's in the list (its id), or the open chat's own in
    /// its header ([`HEAD_MENU`]). Esc or a click elsewhere closes it.
    pub open_menu: RwSignal<Option<String>>,
    /// The user asked to quit while turns run: the question is open.
    pub confirm_quit: RwSignal<bool>,
    /// What the app says for a moment (an action's outcome, a failure), and the
    /// number that tells one saying from the next.
    pub toast: RwSignal<Option<(u64, String)>>,
    /// Bumped to put the cursor in the composer.
    pub focus: RwSignal<u32>,
    /// The composer's agent menu is open.
    pub agent_menu: RwSignal<bool>,
    /// Bumped when the user asks for something that answers at the end of the thread
    /// (a message, a command, a plan run): the view goes to the end and follows it.
    pub follow: RwSignal<u32>,
    /// What a screen reader says next, unasked: the open chat waits for the user, or
    /// its answer is finished (the window's polite live region reads it).
    pub announce: RwSignal<String>,
}

/// The chats: the list, which run, which wait for an answer, and the one open.
#[derive(Debug, Clone, Copy)]
pub struct Chats {
    pub threads: RwSignal<Vec<ThreadInfo>>,
    pub running: RwSignal<Vec<String>>,
    pub pending: RwSignal<Vec<PendingApproval>>,
    /// The open thread; `None` is a new chat.
    pub current: RwSignal<Option<ThreadInfo>>,
    /// Bumped on every thread switch, so a slow load never overwrites a newer one.
    pub generation: RwSignal<u64>,
}

/// The open chat's lines and the composer under them.
#[derive(Debug, Clone, Copy)]
pub struct Chat {
    pub entries: RwSignal<Vec<EntryView>>,
    pub draft: RwSignal<Draft>,
    /// The model picked for the next message (the thread's or the default if none).
    pub model: RwSignal<Option<String>>,
    pub models: RwSignal<Vec<String>>,
    pub composer: RwSignal<String>,
    /// Bumped on every streamed event, so the view can follow the stream.
    pub stream_tick: RwSignal<u64>,
    /// The folder a chat was last given: a new chat starts there.
    pub last_workspace: RwSignal<Option<String>>,
    /// The agent profiles, as last listed (for the composer's menu).
    pub agents: RwSignal<Vec<AgentInfo>>,
    /// What the open chat's answers took, as last read (after each answer).
    pub usage: RwSignal<ThreadUsage>,
    /// The last question as it is being rewritten (Edit), if it is.
    pub editing: RwSignal<Option<String>>,
}

/// What the app is configured with, and what it learned at start.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub settings: RwSignal<Settings>,
    pub presets: RwSignal<Vec<ProviderPreset>>,
    pub shortcut_problem: RwSignal<Option<String>>,
    /// Why closing the window quits instead of hiding it (no tray on this desktop).
    pub tray_problem: RwSignal<Option<String>>,
    /// `CAIRN_*` variables that replaced the saved server at start (`NAME=value`).
    pub env_overrides: RwSignal<Vec<String>>,
}

/// Everything the screens share.
#[derive(Debug, Clone, Copy)]
pub struct Ctx {
    pub nav: Nav,
    pub chats: Chats,
    pub chat: Chat,
    pub config: Config,
}

impl Ctx {
    pub(super) fn new() -> Self {
        Self {
            nav: Nav {
                screen: RwSignal::new(Screen::Loading),
                sidebar_open: RwSignal::new(true),
                narrow_sidebar: RwSignal::new(false),
                open_menu: RwSignal::new(None),
                confirm_quit: RwSignal::new(false),
                toast: RwSignal::new(None),
                focus: RwSignal::new(0),
                agent_menu: RwSignal::new(false),
                follow: RwSignal::new(0),
                announce: RwSignal::new(String::new()),
            },
            chats: Chats {
                threads: RwSignal::new(Vec::new()),
                running: RwSignal::new(Vec::new()),
                pending: RwSignal::new(Vec::new()),
                current: RwSignal::new(None),
                generation: RwSignal::new(0),
            },
            chat: Chat {
                entries: RwSignal::new(Vec::new()),
                draft: RwSignal::new(Draft::default()),
                model: RwSignal::new(None),
                models: RwSignal::new(Vec::new()),
                composer: RwSignal::new(String::new()),
                stream_tick: RwSignal::new(0),
                last_workspace: RwSignal::new(None),
                agents: RwSignal::new(Vec::new()),
                usage: RwSignal::new(ThreadUsage::default()),
                editing: RwSignal::new(None),
            },
            config: Config {
                settings: RwSignal::new(Settings::default()),
                presets: RwSignal::new(Vec::new()),
                shortcut_problem: RwSignal::new(None),
                tray_problem: RwSignal::new(None),
                env_overrides: RwSignal::new(Vec::new()),
            },
        }
    }

    pub fn current_id(&self) -> Option<String> {
        self.chats
            .current
            .with(|current| current.as_ref().map(|thread| thread.id.clone()))
    }

    /// The agent the open chat answers as (a new chat's: picked, else the default).
    pub fn agent(&self) -> String {
        let chosen = match self
            .chats
            .current
            .with(|thread| thread.as_ref().map(|t| t.agent.clone()))
        {
            Some(thread_agent) => thread_agent,
            None => self.chat.draft.with(|draft| draft.agent.clone()),
        };
        chosen.unwrap_or_else(|| self.config.settings.with(|s| s.default_agent.clone()))
    }

    pub fn is_running(&self, thread_id: &str) -> bool {
        self.chats
            .running
            .with(|running| running.iter().any(|id| id == thread_id))
    }

    /// Says `message` in the toast, which goes away by itself after a while (longer
    /// for longer messages).
    pub fn say(&self, message: impl Into<String>) {
        let message = message.into();
        let shown_for = toast_time(&message);
        let toast = self.nav.toast;
        let id = toast.with_untracked(|now| now.as_ref().map_or(0, |(id, _)| id + 1));
        toast.set(Some((id, message)));
        set_timeout(
            move || {
                if toast.with_untracked(|now| now.as_ref().is_some_and(|(now, _)| *now == id)) {
                    toast.set(None);
                }
            },
            shown_for,
        );
    }
}

/// How long a toast stays: time to read it, 4 to 12 seconds.
fn toast_time(message: &str) -> std::time::Duration {
    let chars = u64::try_from(message.chars().count()).unwrap_or(u64::MAX);
    std::time::Duration::from_millis(
        4_000u64
            .saturating_add(chars.saturating_mul(60))
            .min(12_000),
    )
}

pub fn ctx() -> Ctx {
    expect_context::<Ctx>()
}
