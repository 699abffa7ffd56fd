//! Model servers: which one a thread talks to, finding the running ones, their
//! models, pulling a model, and the API keys that live in the keychain.

use cairn_protocol::desktop::commands::{ModelContext, WarmPrompt};
use cairn_protocol::desktop::{
    CommandError, ContextInfo, DetectedServer, ProviderPreset, PullPhase, PullStep, ServerCheck,
};
use cairn_protocol::{Dialect, ThreadInfo};
use cairn_runtime::{
    DefaultModel, Endpoint, ModelChoice, ModelRequest, PRESETS, Preset, Sampling, resolve_model,
};
use futures_util::StreamExt;

use super::{Desk, DeskError};

pub fn presets() -> Vec<ProviderPreset> {
    PRESETS.iter().map(preset_view).collect()
}

fn preset_view(preset: &Preset) -> ProviderPreset {
    ProviderPreset {
        id: preset.id.to_owned(),
        name: preset.name.to_owned(),
        dialect: preset.dialect,
        base_url: preset.base_url.to_owned(),
        needs_key: preset.needs_key,
        start_hint: preset.start_hint.to_owned(),
    }
}

impl Desk {
    /// The model a thread's next turn uses: the one chosen now (on the server in
    /// Settings), else the thread's own (on the server it used), else the default in
    /// Settings.
    pub(super) async fn model_choice(
        &self,
        thread: Option<&ThreadInfo>,
        chosen: Option<String>,
    ) -> Result<ModelChoice, DeskError> {
        let settings = self.settings();
        let chosen = chosen.filter(|model| !model.trim().is_empty());
        let in_settings = Endpoint::new(settings.dialect, settings.base_url.clone());
        let mut request = ModelRequest {
            // The model menu lists the models of the server in Settings.
            server: chosen.is_some().then(|| in_settings.clone()),
            model: chosen,
            default_server: Some(in_settings),
            default_model: DefaultModel::Set(settings.model.clone()),
            api_key: None,
            idle_timeout: None,
            context_cap: None,
            sampling: Sampling::default(),
        };
        // The thread's parameters (/llm), then their defaults, then Settings'.
        self.runtime
            .apply_llm(&mut request, thread.map(|t| t.id.as_str()))
            .await?;
        request.context_cap = request.context_cap.or(settings.context_cap);
        let sampling = &mut request.sampling;
        sampling.temperature = sampling.temperature.or(settings.temperature);
        sampling.top_p = sampling.top_p.or(settings.top_p);
        sampling.max_tokens = sampling.max_tokens.or(settings.max_tokens);
        Ok(resolve_model(request, thread, self.secrets.as_ref()).await?)
    }

    /// What the model a turn would use can hold, as its server says, and whether the
    /// tools would be shown on demand to fit.
    pub async fn model_context(&self, args: ModelContext) -> Result<ContextInfo, DeskError> {
        let thread = self.runtime.thread_if(args.thread_id.as_deref()).await?;
        let choice = self.model_choice(thread.as_ref(), args.model).await?;
        let report = self
            .runtime()
            .context_report(
                args.thread_id.as_deref(),
                (args.mode, args.workspace.as_deref()),
                &choice,
            )
            .await?;
        let window = report.fit.window;
        let checkup = self
            .runtime()
            .model_checkup(&choice.base_url, &choice.model)
            .await?;
        Ok(ContextInfo {
            tokens: window.as_ref().map(|window| window.tokens),
            source: window.map(|window| window.source),
            tools_on_demand: report.tools.on_demand,
            on_demand: report.tools.groups,
            tools_in_text: report.tools_in_text,
            checkup: checkup.map(|checkup| checkup.said()),
        })
    }

    /// Has the server of the model a turn would use read that turn's prompt ahead of
    /// its question (a local server only; see [`cairn_runtime::Runtime::warm`]).
    pub async fn warm_prompt(&self, args: WarmPrompt) -> Result<(), DeskError> {
        let thread = self.runtime.thread_if(args.thread_id.as_deref()).await?;
        let choice = self.model_choice(thread.as_ref(), args.model).await?;
        self.runtime()
            .warm(
                args.thread_id.as_deref(),
                (args.mode, args.workspace.as_deref()),
                &choice,
            )
            .await?;
        Ok(())
    }

    /// An endpoint with its key from the keychain (OpenAI-compatible servers only).
    fn endpoint(&self, dialect: Dialect, base_url: &str) -> Result<Endpoint, DeskError> {
        let mut endpoint = Endpoint::new(dialect, base_url);
        endpoint.api_key = cairn_runtime::api_key(&endpoint, None, self.secrets.as_ref())?;
        Ok(endpoint)
    }

    /// The presets that answer at their usual address (Ollama at the address in
    /// Settings, if the user moved it), with their models.
    pub async fn detect_servers(&self) -> Vec<DetectedServer> {
        let settings = self.settings();
        let found = cairn_runtime::detect_servers(|preset| {
            if preset.id == "ollama" && settings.dialect == Dialect::Ollama {
                settings.base_url.clone()
            } else {
                preset.base_url.to_owned()
            }
        })
        .await;
        found
            .into_iter()
            .map(|server| DetectedServer {
                preset: preset_view(&server.preset),
                base_url: server.base_url,
                models: server.models,
            })
            .collect()
    }

    /// The models a server offers; the server in Settings unless one is named.
    pub async fn list_models(
        &self,
        server: Option<(Dialect, String)>,
    ) -> Result<Vec<String>, DeskError> {
        let settings = self.settings();
        let (dialect, base_url) = server.unwrap_or((settings.dialect, settings.base_url));
        let endpoint = self.endpoint(dialect, &base_url)?;
        let mut models = cairn_runtime::list_models(&endpoint).await?;
        models.sort();
        Ok(models)
    }

    /// Whether the server answers with `dialect` at `base_url`, and if not, why, and
    /// which dialect the address looks like when it is not `dialect`.
    pub async fn check_server(&self, dialect: Dialect, base_url: &str) -> ServerCheck {
        match self.list_models(Some((dialect, base_url.to_owned()))).await {
            Ok(models) => ServerCheck {
                models,
                problem: None,
                suggested_dialect: None,
            },
            Err(err) => ServerCheck {
                models: Vec::new(),
                problem: Some(CommandError::from(err).message),
                suggested_dialect: Endpoint::dialect_mismatch(dialect, base_url),
            },
        }
    }

    /// Downloads a model into the Ollama server in Settings, reporting each step.
    /// The last step says `success` or carries the error.
    pub async fn pull_model(&self, model: &str, mut progress: impl FnMut(PullStep)) {
        let settings = self.settings();
        let model = model.trim();
        let fail = |message: String| PullStep {
            phase: PullPhase::Failed,
            status: "error".into(),
            completed: None,
            total: None,
            error: Some(message),
        };
        if model.is_empty() {
            return progress(fail("name the model to download, like `qwen3:8b`".into()));
        }
        if settings.dialect != Dialect::Ollama {
            return progress(fail(
                "only Ollama can download models; the server in Settings is not Ollama".into(),
            ));
        }
        let steps = match cairn_runtime::pull_model(&settings.base_url, model) {
            Ok(steps) => steps,
            Err(err) => return progress(fail(err.to_string())),
        };
        let mut steps = std::pin::pin!(steps);
        while let Some(step) = steps.next().await {
            match step {
                Ok(step) => progress(step),
                Err(err) => return progress(fail(err.to_string())),
            }
        }
    }

    /// Keeps a server's API key in the keychain. The key never comes back out to
    /// the webview.
    pub fn set_api_key(&self, base_url: &str, key: &str) -> Result<(), DeskError> {
        let endpoint = keyed(base_url);
        Ok(cairn_runtime::set_api_key(
            self.secrets.as_ref(),
            &endpoint,
            key,
        )?)
    }

    pub fn delete_api_key(&self, base_url: &str) -> Result<bool, DeskError> {
        let endpoint = keyed(base_url);
        Ok(cairn_runtime::delete_api_key(
            self.secrets.as_ref(),
            &endpoint,
        )?)
    }

    pub fn has_api_key(&self, base_url: &str) -> Result<bool, DeskError> {
        let endpoint = keyed(base_url);
        Ok(cairn_runtime::has_api_key(
            self.secrets.as_ref(),
            &endpoint,
        )?)
    }
}

/// The server a key is for: keys belong to OpenAI-compatible servers (Ollama takes
/// none).
fn keyed(base_url: &str) -> Endpoint {
    Endpoint::new(Dialect::Openai, base_url.trim())
}
