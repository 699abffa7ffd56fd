//! Plans the model drafts with `create_plan`: their steps, how they run, and the
//! events that show them (`plan_created`, `plan_review`; `plan_ready` names a draft).

use serde::{Deserialize, Serialize};

/// The engine's tool that drafts, reviews or runs a plan.
pub const CREATE_PLAN: &str = "create_plan";

/// What `create_plan` does with the plan once it is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Every step runs as a subtask, independent ones in parallel.
    #[default]
    AutoExecute,
    /// Nothing runs: the plan waits for the user.
    DraftOnly,
    /// A reviewer critiques it first; approved, it runs.
    AgentReview,
}

impl ExecutionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AutoExecute => "auto_execute",
            Self::DraftOnly => "draft_only",
            Self::AgentReview => "agent_review",
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub instructions: String,
    /// The only tools the step may use (a subset of the planner's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The agent profile the step runs as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The steps whose results it needs; it runs once they are done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

/// A plan as its thread keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPlan {
    /// `p1`, `p2`, … in the order the thread's plans were made.
    pub plan_id: String,
    pub objective: String,
    pub steps: Vec<PlanStep>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requested_outputs: Vec<String>,
}

/// A plan was made (and stored under `plan_id` on its thread).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanCreated {
    pub plan_id: String,
    pub objective: String,
    pub steps: Vec<PlanStep>,
    pub execution_mode: ExecutionMode,
    /// The `create_plan` call: its steps' cards have it as their `parent_id`.
    pub tool_call_id: String,
    pub parent_id: Option<String>,
    pub depth: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approved,
    NeedsChanges,
}

/// A reviewer's verdict on a plan (`execution_mode: agent_review`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanReview {
    pub plan_id: String,
    pub verdict: Verdict,
    pub notes: String,
    pub tool_call_id: String,
}
