//! `create_plan`: a plan of steps the model drafts, has reviewed, or runs.
//!
//! arguments → steps (given, or a stored draft's) → checked (ids, dependencies, tools,
//! agents) → stored on the thread as `p1`, `p2`, … → `plan_created` → by mode: a draft
//! (and in Plan mode always a draft), or its steps run as subtasks in dependency order,
//! independent ones together → a summary in plan order.

mod book;
mod check;
mod draft;
mod run;

use cairn_protocol::{ExecutionMode, PlanStep, ToolSpec};
use serde::Deserialize;
use serde_json::json;

pub use book::{MemoryPlans, PlanBook, StoredPlan};
pub use cairn_protocol::CREATE_PLAN;
pub(crate) use run::create_plan;

/// The planning round's tool: its arguments are the plan's steps.
pub const SUBMIT_PLAN: &str = "submit_plan";
/// The reviewer's tool: its arguments are the verdict and the notes.
pub const SUBMIT_REVIEW: &str = "submit_review";

/// The tool group `create_plan` waits in until loaded.
pub const PLAN_TOOLS: &str = "plans";

pub fn create_plan_spec() -> ToolSpec {
    ToolSpec {
        name: CREATE_PLAN.into(),
        description: "Make a plan of steps for work with several parts, then run it, keep it as \
                      a draft for the user, or have it reviewed first. Each step runs as a \
                      subtask; steps whose dependencies are done run in parallel, and each sees \
                      the results of the steps it depends on. To run a stored draft, give only \
                      its plan_id."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "objective": {"type": "string", "description": "What the plan achieves"},
                "steps": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "description": "Short and unique: s1, s2, …"},
                            "title": {"type": "string"},
                            "instructions": {"type": "string", "description": "Everything the step needs; it sees nothing else but its dependencies' results"},
                            "tools": {"type": "array", "items": {"type": "string"}},
                            "agent": {"type": "string"},
                            "depends_on": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["id", "title", "instructions"]
                    }
                },
                "execution_mode": {
                    "type": "string",
                    "enum": ["auto_execute", "draft_only", "agent_review"],
                    "description": "auto_execute (default) runs it; draft_only keeps it for the user to review; agent_review has a reviewer check it first"
                },
                "requested_outputs": {"type": "array", "items": {"type": "string"}},
                "plan_id": {"type": "string", "description": "A stored draft to run as it is (p1, p2, …)"}
            }
        }),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct CreatePlanArgs {
    #[serde(default)]
    pub objective: Option<String>,
    #[serde(default)]
    pub steps: Option<Vec<PlanStep>>,
    #[serde(default)]
    pub execution_mode: Option<ExecutionMode>,
    #[serde(default)]
    pub requested_outputs: Option<Vec<String>>,
    #[serde(default)]
    pub plan_id: Option<String>,
}
