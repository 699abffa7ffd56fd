//! Settings (JSON values by key), the permission rules, and the agent's memory.

use cairn_protocol::RuleList;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Store, StoreError, now_ms};

/// A stored rule, with the id `cairn rules remove` takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredRule {
    pub id: i64,
    pub list: RuleList,
    pub rule: String,
}

impl Store {
    /// A setting, decoded; `None` when it was never set.
    pub async fn setting<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StoreError> {
        let json: Option<String> = sqlx::query_scalar("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        json.map(|json| {
            serde_json::from_str(&json).map_err(|err| {
                StoreError::Invalid(format!("the setting `{key}` cannot be read: {err}"))
            })
        })
        .transpose()
    }

    pub async fn set_setting<T: Serialize>(&self, key: &str, value: &T) -> Result<(), StoreError> {
        let json = serde_json::to_string(value).map_err(|err| {
            StoreError::Invalid(format!("the setting `{key}` cannot be stored: {err}"))
        })?;
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .bind(key)
            .bind(json)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(())
    }

    /// The permission rules, in the order they were added.
    pub async fn rules(&self) -> Result<Vec<StoredRule>, StoreError> {
        let rows: Vec<(i64, String, String)> =
            sqlx::query_as("SELECT id, list, rule FROM permission_rules ORDER BY id")
                .fetch_all(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        rows.into_iter()
            .map(|(id, list, rule)| {
                let list = list.parse().map_err(StoreError::Invalid)?;
                Ok(StoredRule { id, list, rule })
            })
            .collect()
    }

    /// Adds a rule; adding it twice is no error. `rule` is the text of a rule the
    /// permission gate parsed (the runtime checks it), so every stored rule applies.
    pub async fn add_rule(&self, list: RuleList, rule: &str) -> Result<StoredRule, StoreError> {
        sqlx::query(
            "INSERT OR IGNORE INTO permission_rules (list, rule, created_at) VALUES (?, ?, ?)",
        )
        .bind(list.as_str())
        .bind(rule)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        let id: i64 =
            sqlx::query_scalar("SELECT id FROM permission_rules WHERE list = ? AND rule = ?")
                .bind(list.as_str())
                .bind(rule)
                .fetch_one(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        Ok(StoredRule {
            id,
            list,
            rule: rule.to_owned(),
        })
    }

    /// Removes a rule by id, or by list and text; `false` if there was none.
    pub async fn remove_rule(&self, id: i64) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM permission_rules WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(result.rows_affected() > 0)
    }
}

/// The agent's memory: notes by key that outlive threads.
impl Store {
    /// Every key with the first line of its note (at most 120 characters).
    pub async fn memory_list(&self) -> Result<Vec<(String, String)>, StoreError> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT key, value FROM memory ORDER BY key")
                .fetch_all(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        Ok(rows
            .into_iter()
            .map(|(key, value)| {
                let first: String = value
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(120)
                    .collect();
                (key, first)
            })
            .collect())
    }

    pub async fn memory_read(&self, key: &str) -> Result<Option<String>, StoreError> {
        sqlx::query_scalar("SELECT value FROM memory WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|err| self.err(err))
    }

    pub async fn memory_write(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO memory (key, value, updated_at) VALUES (?, ?, ?) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(key)
        .bind(value)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(())
    }
}
