//! The model's parameters a user (or, asking first, the agent) can set: as defaults
//! for every thread, and per thread, a thread's value winning (`/llm`, `cairn llm`,
//! the `set_llm_params` tool).

use serde::{Deserialize, Serialize};

/// Values set; an unset one falls back (thread → defaults → the front end's own).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Ollama: the largest context window to ask for, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_cap: Option<u32>,
    /// The model the tool loop runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The parameters as they stand for a thread (or for new threads): the defaults, the
/// thread's own, and what applies (a front end's own settings fill what none sets).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmView {
    pub defaults: LlmParams,
    pub thread: Option<LlmParams>,
    pub effective: LlmParams,
}

impl LlmView {
    pub fn new(defaults: LlmParams, thread: Option<LlmParams>) -> Self {
        let effective = match &thread {
            Some(own) => own.over(&defaults),
            None => defaults.clone(),
        };
        Self {
            defaults,
            thread,
            effective,
        }
    }
}

/// Where a parameter's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmSource {
    /// The thread's own.
    Thread,
    /// The defaults for every thread.
    Default,
}

impl LlmView {
    /// Where `key`'s value comes from; none: neither sets it.
    pub fn source(&self, key: &str) -> Option<LlmSource> {
        if self
            .thread
            .as_ref()
            .is_some_and(|own| own.get(key).is_some())
        {
            Some(LlmSource::Thread)
        } else if self.defaults.get(key).is_some() {
            Some(LlmSource::Default)
        } else {
            None
        }
    }
}

/// The names `set` and `reset` take, in the order `show` lists them.
pub const LLM_KEYS: [&str; 5] = ["temperature", "top_p", "max_tokens", "context_cap", "model"];

const MAX_TOKENS: std::ops::RangeInclusive<u32> = 1..=1_048_576;
const CONTEXT_CAP: std::ops::RangeInclusive<u32> = 512..=1_048_576;

/// Why a model parameter was left as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LlmError {
    /// No parameter has this name.
    UnknownKey(String),
    /// The value is not one the parameter takes; `takes` says what it does.
    OutOfRange {
        key: String,
        value: String,
        takes: String,
    },
    /// `model` was given an empty name.
    NoModelName,
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownKey(key) => write!(
                f,
                "there is no parameter `{key}`: use one of {}",
                LLM_KEYS.join(", ")
            ),
            Self::OutOfRange { key, value, takes } => {
                write!(f, "{key} takes {takes}, not `{value}`")
            }
            Self::NoModelName => f.write_str("model takes a model's name"),
        }
    }
}

impl std::error::Error for LlmError {}

impl LlmParams {
    /// Sets `key` from its text, refusing a value out of range with the range.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), LlmError> {
        let value = value.trim();
        let refused = |takes: String| LlmError::OutOfRange {
            key: key.to_owned(),
            value: value.to_owned(),
            takes,
        };
        let float = |range: (f64, f64)| -> Result<f64, LlmError> {
            match value.parse::<f64>() {
                Ok(v) if v >= range.0 && v <= range.1 => Ok(v),
                _ => Err(refused(format!("a number from {} to {}", range.0, range.1))),
            }
        };
        let whole = |range: &std::ops::RangeInclusive<u32>| -> Result<u32, LlmError> {
            match value.parse::<u32>() {
                Ok(v) if range.contains(&v) => Ok(v),
                _ => Err(refused(format!(
                    "a whole number from {} to {}",
                    range.start(),
                    range.end()
                ))),
            }
        };
        match key {
            "temperature" => self.temperature = Some(float((0.0, 2.0))?),
            "top_p" => self.top_p = Some(float((0.0, 1.0))?),
            "max_tokens" => self.max_tokens = Some(whole(&MAX_TOKENS)?),
            "context_cap" => self.context_cap = Some(whole(&CONTEXT_CAP)?),
            "model" if value.is_empty() => return Err(LlmError::NoModelName),
            "model" => self.model = Some(value.to_owned()),
            other => return Err(LlmError::UnknownKey(other.to_owned())),
        }
        Ok(())
    }

    /// Unsets `key`, or every key.
    pub fn reset(&mut self, key: Option<&str>) -> Result<(), LlmError> {
        match key {
            None => *self = Self::default(),
            Some("temperature") => self.temperature = None,
            Some("top_p") => self.top_p = None,
            Some("max_tokens") => self.max_tokens = None,
            Some("context_cap") => self.context_cap = None,
            Some("model") => self.model = None,
            Some(other) => return Err(LlmError::UnknownKey(other.to_owned())),
        }
        Ok(())
    }

    /// These values, with `under`'s where these have none.
    pub fn over(&self, under: &Self) -> Self {
        Self {
            temperature: self.temperature.or(under.temperature),
            top_p: self.top_p.or(under.top_p),
            max_tokens: self.max_tokens.or(under.max_tokens),
            context_cap: self.context_cap.or(under.context_cap),
            model: self.model.clone().or_else(|| under.model.clone()),
        }
    }

    /// `key`'s value as text, if set.
    pub fn get(&self, key: &str) -> Option<String> {
        match key {
            "temperature" => self.temperature.map(|v| v.to_string()),
            "top_p" => self.top_p.map(|v| v.to_string()),
            "max_tokens" => self.max_tokens.map(|v| v.to_string()),
            "context_cap" => self.context_cap.map(|v| v.to_string()),
            "model" => self.model.clone(),
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_in_range_are_kept_and_the_rest_refused_with_the_range() {
        let mut params = LlmParams::default();
        params.set("temperature", "0.3").unwrap();
        params.set("top_p", "1").unwrap();
        params.set("max_tokens", "2048").unwrap();
        params.set("context_cap", "8192").unwrap();
        params.set("model", " qwen3:32b ").unwrap();
        assert_eq!(
            params,
            LlmParams {
                temperature: Some(0.3),
                top_p: Some(1.0),
                max_tokens: Some(2048),
                context_cap: Some(8192),
                model: Some("qwen3:32b".into()),
            }
        );
        for (key, value, expected) in [
            (
                "temperature",
                "2.5",
                "temperature takes a number from 0 to 2, not `2.5`",
            ),
            (
                "temperature",
                "warm",
                "temperature takes a number from 0 to 2, not `warm`",
            ),
            (
                "top_p",
                "-0.1",
                "top_p takes a number from 0 to 1, not `-0.1`",
            ),
            (
                "max_tokens",
                "0",
                "max_tokens takes a whole number from 1 to 1048576, not `0`",
            ),
            (
                "context_cap",
                "100",
                "context_cap takes a whole number from 512 to 1048576, not `100`",
            ),
            ("model", "", "model takes a model's name"),
            (
                "seed",
                "1",
                "there is no parameter `seed`: use one of temperature, top_p, max_tokens, context_cap, model",
            ),
        ] {
            let mut kept = params.clone();
            assert_eq!(
                kept.set(key, value).map_err(|err| err.to_string()),
                Err(expected.to_owned()),
                "{key}={value}"
            );
            assert_eq!(kept, params, "a refused value changes nothing");
        }
    }

    #[test]
    fn a_threads_values_win_over_the_defaults_and_reset_one_or_all() {
        let mut defaults = LlmParams::default();
        defaults.set("temperature", "0.7").unwrap();
        defaults.set("max_tokens", "512").unwrap();
        let mut thread = LlmParams::default();
        thread.set("temperature", "0").unwrap();
        let both = thread.over(&defaults);
        assert_eq!((both.temperature, both.max_tokens), (Some(0.0), Some(512)));
        thread.reset(Some("temperature")).unwrap();
        assert!(thread.is_empty());
        defaults.reset(None).unwrap();
        assert!(defaults.is_empty());
        assert!(defaults.reset(Some("nope")).is_err());
    }
}
