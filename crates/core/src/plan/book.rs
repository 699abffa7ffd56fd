//! Where a thread's plans are kept: a port the runtime fills with the store; turns
//! without one keep their plans for the turn alone.

use std::sync::Mutex;

use async_trait::async_trait;
pub use cairn_protocol::StoredPlan;

use crate::PortError;

#[async_trait]
pub trait PlanBook: Send + Sync {
    /// Keeps a new plan and names it (`plan.plan_id` is ignored).
    async fn add(&self, plan: StoredPlan) -> Result<String, PortError>;

    async fn get(&self, plan_id: &str) -> Result<Option<StoredPlan>, PortError>;
}

impl std::fmt::Debug for dyn PlanBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanBook")
    }
}

/// Plans kept in memory.
#[derive(Debug, Default)]
pub struct MemoryPlans {
    plans: Mutex<Vec<StoredPlan>>,
}

#[async_trait]
impl PlanBook for MemoryPlans {
    async fn add(&self, mut plan: StoredPlan) -> Result<String, PortError> {
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        plan.plan_id = format!("p{}", plans.len() + 1);
        let id = plan.plan_id.clone();
        plans.push(plan);
        Ok(id)
    }

    async fn get(&self, plan_id: &str) -> Result<Option<StoredPlan>, PortError> {
        let plans = self
            .plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Ok(plans.iter().find(|plan| plan.plan_id == plan_id).cloned())
    }
}
