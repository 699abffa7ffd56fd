//! Plans kept on their thread, named `p1`, `p2`, … in the order they were made.

use cairn_protocol::StoredPlan;

use crate::{Store, StoreError, now_ms};

impl Store {
    /// Keeps `plan` on `thread_id` under the next id (its `plan_id` is ignored).
    pub async fn add_plan(&self, thread_id: &str, plan: &StoredPlan) -> Result<String, StoreError> {
        let mut tx = self.write().await?;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plans WHERE thread_id = ?")
            .bind(thread_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        let plan_id = format!("p{}", count + 1);
        let plan = StoredPlan {
            plan_id: plan_id.clone(),
            ..plan.clone()
        };
        let json = serde_json::to_string(&plan)
            .map_err(|err| StoreError::Invalid(format!("cannot encode the plan: {err}")))?;
        sqlx::query("INSERT INTO plans (thread_id, plan_id, plan, created_at) VALUES (?, ?, ?, ?)")
            .bind(thread_id)
            .bind(&plan_id)
            .bind(json)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        tx.commit().await.map_err(|err| self.err(err))?;
        Ok(plan_id)
    }

    /// A plan of `thread_id` by its id.
    pub async fn plan(
        &self,
        thread_id: &str,
        plan_id: &str,
    ) -> Result<Option<StoredPlan>, StoreError> {
        let json: Option<String> =
            sqlx::query_scalar("SELECT plan FROM plans WHERE thread_id = ? AND plan_id = ?")
                .bind(thread_id)
                .bind(plan_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(|err| self.err(err))?;
        json.map(|json| {
            serde_json::from_str(&json).map_err(|err| {
                StoreError::Invalid(format!("the plan `{plan_id}` cannot be read: {err}"))
            })
        })
        .transpose()
    }
}
