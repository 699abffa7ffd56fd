//! The engine's and the tools' ports served by the store: the permission rules as
//! the gate reads them, the agent's memory, and a thread's plans.

use async_trait::async_trait;
use cairn_core::plan::{PlanBook, StoredPlan};
use cairn_core::{PortError, Rule, RuleList, RuleSet};
use cairn_store::{Store, StoredRule};
use cairn_tools::MemoryStore;

use crate::RuntimeError;

/// Adds a permission rule once it parses (`run_command(cargo test:*)`), stored in
/// the form the gate reads back; adding it twice is no error.
pub async fn add_rule(
    store: &Store,
    list: RuleList,
    rule: &str,
) -> Result<StoredRule, RuntimeError> {
    let parsed = Rule::parse(rule.trim()).map_err(RuntimeError::Rule)?;
    Ok(store.add_rule(list, parsed.as_str()).await?)
}

/// The stored rules as the gate uses them. One that no longer parses (written by a
/// newer version, say) is skipped with a warning rather than stopping every turn.
pub async fn rule_set(store: &Store) -> Result<RuleSet, RuntimeError> {
    let mut set = RuleSet::new();
    for stored in store.rules().await? {
        match Rule::parse(&stored.rule) {
            Ok(rule) => set.add(stored.list, rule),
            Err(err) => tracing::warn!(%err, "a stored permission rule is skipped"),
        }
    }
    Ok(set)
}

/// The memory tools' notes, kept in the store.
#[derive(Debug, Clone)]
pub struct StoredMemory(pub Store);

#[async_trait]
impl MemoryStore for StoredMemory {
    async fn list(&self) -> Result<Vec<(String, String)>, PortError> {
        self.0.memory_list().await.map_err(PortError::new)
    }

    async fn read(&self, key: &str) -> Result<Option<String>, PortError> {
        self.0.memory_read(key).await.map_err(PortError::new)
    }

    async fn write(&self, key: &str, value: &str) -> Result<(), PortError> {
        self.0
            .memory_write(key, value)
            .await
            .map_err(PortError::new)
    }
}

/// A thread's plans, kept in the store.
#[derive(Debug, Clone)]
pub struct StoredPlans {
    pub store: Store,
    pub thread_id: String,
}

#[async_trait]
impl PlanBook for StoredPlans {
    async fn add(&self, plan: StoredPlan) -> Result<String, PortError> {
        self.store
            .add_plan(&self.thread_id, &plan)
            .await
            .map_err(PortError::new)
    }

    async fn get(&self, plan_id: &str) -> Result<Option<StoredPlan>, PortError> {
        self.store
            .plan(&self.thread_id, plan_id)
            .await
            .map_err(PortError::new)
    }
}
