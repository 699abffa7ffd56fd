//! What Cairn learned of models by trying them (their check-up), kept across runs: a
//! model is checked once, not at every start.

use crate::{Store, StoreError, now_ms};

/// One model's check-up, as the providers' words for it (`calls`: `native`, `text`
/// or `none`; `results`: `native`, `restated` or `restated_answer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelHabits {
    pub calls: String,
    pub results: String,
    /// Whether some way of showing a result got the model to answer from it.
    pub answered: bool,
    /// Milliseconds since the Unix epoch.
    pub checked_at: i64,
}

impl Store {
    /// What was learned of `model` on `server`, if it was ever checked.
    pub async fn model_habits(
        &self,
        server: &str,
        model: &str,
    ) -> Result<Option<ModelHabits>, StoreError> {
        let row: Option<(String, String, bool, i64)> = sqlx::query_as(
            "SELECT calls, results, answered, checked_at FROM model_habits \
             WHERE server = ? AND model = ?",
        )
        .bind(server)
        .bind(model)
        .fetch_optional(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(
            row.map(|(calls, results, answered, checked_at)| ModelHabits {
                calls,
                results,
                answered,
                checked_at,
            }),
        )
    }

    /// Keeps what was learned of `model` on `server` now, over what was before.
    pub async fn set_model_habits(
        &self,
        server: &str,
        model: &str,
        calls: &str,
        results: &str,
        answered: bool,
    ) -> Result<ModelHabits, StoreError> {
        let checked_at = now_ms();
        sqlx::query(
            "INSERT INTO model_habits (server, model, calls, results, answered, checked_at) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (server, model) DO UPDATE SET \
             calls = excluded.calls, results = excluded.results, \
             answered = excluded.answered, checked_at = excluded.checked_at",
        )
        .bind(server)
        .bind(model)
        .bind(calls)
        .bind(results)
        .bind(answered)
        .bind(checked_at)
        .execute(&self.pool)
        .await
        .map_err(|err| self.err(err))?;
        Ok(ModelHabits {
            calls: calls.to_owned(),
            results: results.to_owned(),
            answered,
            checked_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[tokio::test]
    async fn a_check_up_is_kept_and_replaced_by_the_next() {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let store = Store::open(&dir.path().join("c.db"))
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        let server = "http://127.0.0.1:8080";
        assert_eq!(store.model_habits(server, "m").await.ok(), Some(None));
        store
            .set_model_habits(server, "m", "text", "restated", true)
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        let again = store
            .set_model_habits(server, "m", "native", "native", true)
            .await
            .unwrap_or_else(|err| panic!("{err}"));
        let kept = store.model_habits(server, "m").await.ok().flatten();
        assert_eq!(kept, Some(again));
        assert_eq!(store.model_habits(server, "other").await.ok(), Some(None));
    }
}
