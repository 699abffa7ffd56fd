//! Messages a front end sends to a running turn.

use serde::{Deserialize, Serialize};

use crate::permission::ApprovalDecision;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientMessage {
    ApprovalResponse(ApprovalResponse),
}

/// The answer to one `tool_approval_request`, matched by `approval_id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResponse {
    pub approval_id: String,
    pub decision: ApprovalDecision,
}
