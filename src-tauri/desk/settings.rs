//! The user's settings: checked before they are kept, kept in the store.

use std::sync::PoisonError;

use cairn_protocol::desktop::{SavedEndpoint, ServerView, Settings};
use cairn_runtime::Endpoint;
use serde::{Deserialize, Serialize};

use super::{Desk, DeskError};

/// The store setting that holds [`Settings`].
pub const SETTINGS_KEY: &str = "desktop.settings";
/// The page zooms the app accepts.
pub const ZOOM_PERCENT: std::ops::RangeInclusive<u16> = 50..=300;

/// The store setting that holds the folder a chat was last given.
pub const LAST_WORKSPACE_KEY: &str = "desktop.last_workspace";

/// The store setting that holds the window's last size and place.
pub const WINDOW_KEY: &str = "desktop.window";

/// Where the window was, in physical pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowGeometry {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub maximized: bool,
}

/// Server settings from the environment (`CAIRN_BASE_URL`, `CAIRN_DIALECT`,
/// `CAIRN_MODEL`, as the CLI reads them), over the stored ones for this run.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub base_url: Option<String>,
    pub dialect: Option<String>,
    pub model: Option<String>,
}

impl Overrides {
    pub fn from_env() -> Self {
        let var = |name| std::env::var(name).ok().filter(|value| !value.is_empty());
        Self {
            base_url: var("CAIRN_BASE_URL"),
            dialect: var("CAIRN_DIALECT"),
            model: var("CAIRN_MODEL"),
        }
    }

    /// The variables set, as `NAME=value`.
    pub(super) fn named(&self) -> Vec<String> {
        [
            ("CAIRN_BASE_URL", &self.base_url),
            ("CAIRN_DIALECT", &self.dialect),
            ("CAIRN_MODEL", &self.model),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|value| format!("{name}={value}")))
        .collect()
    }

    /// `submitted` as it is kept: a field an override set and the user left as it
    /// was shown keeps its stored value. An override lasts one run; a setting saved is
    /// only what the user set (zooming under `CAIRN_BASE_URL` once saved the
    /// override's server, and the next plain launch talked to it).
    pub(super) fn kept(
        &self,
        submitted: &Settings,
        shown: &Settings,
        stored: &Settings,
    ) -> Settings {
        let mut kept = submitted.clone();
        let server_overridden = self.base_url.is_some() || self.dialect.is_some();
        if server_overridden
            && submitted.base_url == shown.base_url
            && submitted.dialect == shown.dialect
        {
            kept.base_url.clone_from(&stored.base_url);
            kept.dialect = stored.dialect;
        }
        if self.model.is_some() && submitted.model == shown.model {
            kept.model.clone_from(&stored.model);
            if submitted.first_run_done == shown.first_run_done {
                kept.first_run_done = stored.first_run_done;
            }
        }
        kept
    }

    pub(super) fn apply(&self, settings: &mut Settings) -> Result<(), DeskError> {
        if let Some(base_url) = &self.base_url {
            settings.base_url.clone_from(base_url);
            settings.dialect = Endpoint::guess_dialect(base_url);
        }
        if let Some(dialect) = &self.dialect {
            settings.dialect = dialect
                .parse()
                .map_err(|err: cairn_protocol::UnknownDialect| {
                    DeskError::Invalid(format!("the CAIRN_* environment variables: {err}"))
                })?;
        }
        if let Some(model) = &self.model {
            settings.model = Some(model.clone());
            settings.first_run_done = true;
        }
        check(settings)
            .map_err(|err| DeskError::Invalid(format!("the CAIRN_* environment variables: {err}")))
    }
}

/// The servers the user named: the runtime's list, shared with `cairn servers`. A list
/// only the desktop kept (before the two shared one) moves there once.
pub(super) async fn named_servers(
    runtime: &cairn_runtime::Runtime,
    stored: &Settings,
) -> Result<Vec<SavedEndpoint>, DeskError> {
    let named = runtime.servers().await?;
    if !named.is_empty() || stored.endpoints.is_empty() {
        return Ok(named);
    }
    match runtime.set_servers(stored.endpoints.clone()).await {
        Ok(moved) => Ok(moved),
        Err(err) => {
            tracing::warn!(error = %err, "the desktop's own server list could not be shared");
            Ok(Vec::new())
        }
    }
}

impl Desk {
    /// The settings, with the named servers as they stand now (`cairn servers add`
    /// may have changed them while the window was open).
    pub async fn current_settings(&self) -> Result<Settings, DeskError> {
        let named = self.runtime.servers().await?;
        let mut settings = self
            .settings
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        settings.endpoints = named;
        Ok(settings.clone())
    }

    /// The named servers, each with what it says of itself now.
    pub async fn server_reports(&self) -> Result<Vec<ServerView>, DeskError> {
        Ok(self
            .runtime
            .server_reports()
            .await?
            .into_iter()
            .map(|report| ServerView {
                kind: report.facts.map(|facts| facts.kind.name().to_owned()),
                window: report.facts.and_then(|facts| facts.window),
                slots: report.slots,
                error: report.error,
                server: report.server,
            })
            .collect())
    }

    /// Checks and keeps new settings; the old ones stay if anything is wrong.
    pub async fn save_settings(&self, mut settings: Settings) -> Result<Settings, DeskError> {
        tidy(&mut settings);
        check(&settings).map_err(|bad| DeskError::Invalid(bad.to_string()))?;
        // The runtime keeps the default agent and the named servers where the CLI
        // reads them too.
        self.runtime
            .set_default_agent(&settings.default_agent)
            .await?;
        settings.endpoints = self
            .runtime
            .set_servers(std::mem::take(&mut settings.endpoints))
            .await?;
        let kept = {
            let stored = self.stored.read().unwrap_or_else(PoisonError::into_inner);
            self.overrides.kept(&settings, &self.settings(), &stored)
        };
        self.runtime.set_setting(SETTINGS_KEY, &kept).await?;
        *self.stored.write().unwrap_or_else(PoisonError::into_inner) = kept;
        *self
            .settings
            .write()
            .unwrap_or_else(PoisonError::into_inner) = settings.clone();
        Ok(settings)
    }

    /// Keeps a new page zoom (the window applies it).
    pub async fn set_zoom(&self, percent: u16) -> Result<Settings, DeskError> {
        let mut settings = self.settings();
        settings.zoom_percent = percent;
        self.save_settings(settings).await
    }

    pub async fn window_geometry(&self) -> Result<Option<WindowGeometry>, DeskError> {
        Ok(self.runtime.setting(WINDOW_KEY).await?)
    }

    pub async fn save_window_geometry(&self, geometry: WindowGeometry) -> Result<(), DeskError> {
        Ok(self.runtime.set_setting(WINDOW_KEY, &geometry).await?)
    }
}

fn tidy(settings: &mut Settings) {
    settings.base_url = settings.base_url.trim().to_owned();
    settings.summon_shortcut = settings.summon_shortcut.trim().to_owned();
    settings.model = settings
        .model
        .take()
        .map(|model| model.trim().to_owned())
        .filter(|model| !model.is_empty());
}

/// What is wrong with settings, said so the user can fix it.
#[derive(Debug, thiserror::Error)]
pub(super) enum BadSettings {
    #[error(transparent)]
    Server(#[from] cairn_runtime::ProviderError),
    #[error("temperature must be between 0 and 2, not {0}")]
    Temperature(f64),
    #[error("top-p must be above 0 and at most 1, not {0}")]
    TopP(f64),
    #[error("the answer length limit must be at least 1 token")]
    NoAnswerLength,
    #[error("a context window of {0} tokens is too small; use at least 512")]
    ContextCap(u32),
    #[error("the summon shortcut cannot be empty")]
    NoShortcut,
    #[error(
        "the zoom must be between {min}% and {max}%, not {0}%",
        min = ZOOM_PERCENT.start(),
        max = ZOOM_PERCENT.end()
    )]
    Zoom(u16),
    #[error(transparent)]
    Servers(#[from] cairn_runtime::BadServerList),
}

/// What is wrong with `settings`, if anything.
fn check(settings: &Settings) -> Result<(), BadSettings> {
    Endpoint::new(settings.dialect, &settings.base_url).normalized_base()?;
    if let Some(t) = settings.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(BadSettings::Temperature(t));
    }
    if let Some(p) = settings.top_p
        && !(p > 0.0 && p <= 1.0)
    {
        return Err(BadSettings::TopP(p));
    }
    if settings.max_tokens == Some(0) {
        return Err(BadSettings::NoAnswerLength);
    }
    if let Some(cap) = settings.context_cap
        && cap < 512
    {
        return Err(BadSettings::ContextCap(cap));
    }
    if settings.summon_shortcut.is_empty() {
        return Err(BadSettings::NoShortcut);
    }
    if !ZOOM_PERCENT.contains(&settings.zoom_percent) {
        return Err(BadSettings::Zoom(settings.zoom_percent));
    }
    Ok(cairn_runtime::check_servers(
        &mut settings.endpoints.clone(),
    )?)
}

#[cfg(test)]
mod tests {
    use cairn_protocol::Dialect;

    use super::*;

    #[test]
    fn defaults_pass_and_each_mistake_is_named() {
        assert!(check(&Settings::default()).is_ok());
        type Spoil = fn(&mut Settings);
        let cases: [(Spoil, &str); 7] = [
            (
                |s| s.zoom_percent = 400,
                "zoom must be between 50% and 300%",
            ),
            (
                |s| s.base_url = "localhost 11434".into(),
                "not a usable server address",
            ),
            (
                |s| s.temperature = Some(3.5),
                "temperature must be between 0 and 2",
            ),
            (|s| s.top_p = Some(0.0), "top-p must be above 0"),
            (|s| s.context_cap = Some(100), "too small"),
            (|s| s.summon_shortcut.clear(), "shortcut cannot be empty"),
            (
                |s| {
                    let server = SavedEndpoint {
                        name: "box".into(),
                        dialect: Dialect::Openai,
                        base_url: "http://gpu:8000".into(),
                        slots: None,
                    };
                    s.endpoints = vec![server.clone(), server];
                },
                "two servers are named `box`",
            ),
        ];
        for (spoil, expected) in cases {
            let mut settings = Settings::default();
            spoil(&mut settings);
            let err = check(&settings).err().map(|err| err.to_string());
            let err = err.unwrap_or_default();
            assert!(err.contains(expected), "{expected:?} not in {err:?}");
        }
    }

    #[test]
    fn overrides_set_the_server_and_guess_its_dialect() {
        let mut settings = Settings::default();
        let overrides = Overrides {
            base_url: Some("http://127.0.0.1:9999/v1".into()),
            dialect: None,
            model: Some("qwen3".into()),
        };
        assert!(overrides.apply(&mut settings).is_ok());
        assert_eq!(settings.dialect, Dialect::Openai);
        assert_eq!(settings.base_url, "http://127.0.0.1:9999/v1");
        assert_eq!(settings.model.as_deref(), Some("qwen3"));
        assert!(settings.first_run_done);

        let wrong = Overrides {
            dialect: Some("soap".into()),
            ..Overrides::default()
        };
        let err = wrong.apply(&mut Settings::default()).err();
        assert!(err.is_some_and(|err| err.to_string().contains("CAIRN_*")));
    }
}
