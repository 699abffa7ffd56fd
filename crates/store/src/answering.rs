//! Which threads a process is answering in. Several processes share one database (the
//! app, a CLI run, a script's runs): each marks the threads it answers in, so that
//! the others refuse to delete or rename them, or to answer in them too, meanwhile. A
//! process that ended without unmarking (a crash, `kill -9`) holds nothing: its marks
//! are ignored once it is gone.

use crate::{Store, StoreError, now_ms};

/// How many times a claim is tried again after another process changed the mark
/// between this one reading it and writing it.
const CLAIM_TRIES: usize = 4;

impl Store {
    /// Marks `thread_id` as answered by this process. False, with nothing changed,
    /// when another process that is still running answers in it.
    pub async fn claim_answering(&self, thread_id: &str) -> Result<bool, StoreError> {
        let own = i64::from(std::process::id());
        for _ in 0..CLAIM_TRIES {
            let written = match self.answering_pid(thread_id).await? {
                Some(pid) if pid != own && still_running(pid) => return Ok(false),
                // Taken over from a process that ended, only if it still holds it.
                Some(pid) => sqlx::query(
                    "UPDATE answering SET pid = ?, since = ? WHERE thread_id = ? AND pid = ?",
                )
                .bind(own)
                .bind(now_ms())
                .bind(thread_id)
                .bind(pid),
                None => sqlx::query(
                    "INSERT INTO answering (thread_id, pid, since) VALUES (?, ?, ?) \
                     ON CONFLICT (thread_id) DO NOTHING",
                )
                .bind(thread_id)
                .bind(own)
                .bind(now_ms()),
            }
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
            if written.rows_affected() == 1 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Takes this process's mark off `thread_id`.
    pub async fn release_answering(&self, thread_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM answering WHERE thread_id = ? AND pid = ?")
            .bind(thread_id)
            .bind(i64::from(std::process::id()))
            .execute(&self.pool)
            .await
            .map_err(|err| self.err(err))?;
        Ok(())
    }

    /// Whether another process that is still running answers in `thread_id`.
    pub async fn answered_elsewhere(&self, thread_id: &str) -> Result<bool, StoreError> {
        let own = i64::from(std::process::id());
        Ok(self
            .answering_pid(thread_id)
            .await?
            .is_some_and(|pid| pid != own && still_running(pid)))
    }

    async fn answering_pid(&self, thread_id: &str) -> Result<Option<i64>, StoreError> {
        sqlx::query_scalar("SELECT pid FROM answering WHERE thread_id = ?")
            .bind(thread_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|err| self.err(err))
    }
}

use crate::liveness::still_running;

#[cfg(test)]
mod tests {
    use super::still_running;

    #[test]
    fn this_process_runs_and_an_ended_one_does_not() {
        assert!(still_running(i64::from(std::process::id())));
        // A child every system can start: this test program, asked only to list its
        // tests.
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("--list")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = i64::from(child.id());
        child.wait().unwrap();
        assert!(!still_running(pid), "a reaped child is gone");
    }
}
