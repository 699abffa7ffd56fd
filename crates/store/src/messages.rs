//! Messages: the turn's two rows, incremental saves, reading a thread back, and the
//! history the next turn replays.

use cairn_protocol::{
    ChatMessage, ExecutionTree, Handover, MessageStatus, MessageView, Role, Usage,
};

use crate::{FileCheckpoint, Store, StoreError, new_id, now_ms};

/// The rows a new turn starts with: the user's message (already complete) and the
/// assistant message that will fill in as the turn runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnStart {
    pub user: MessageView,
    pub assistant_id: String,
}

/// What an assistant message holds at some moment of its turn.
#[derive(Debug, Clone, Copy)]
pub struct AnswerSnapshot<'a> {
    pub content: &'a str,
    pub reasoning: &'a str,
    pub replay: &'a [ChatMessage],
    pub tree: &'a ExecutionTree,
    pub usage: Option<&'a Usage>,
    pub status: MessageStatus,
    pub error: Option<&'a str>,
}

/// A thread title from the prompt that started it: its first line, shortened.
pub fn title_from_prompt(prompt: &str) -> String {
    const MAX: usize = 60;
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    if line.chars().count() <= MAX {
        return if line.is_empty() {
            "New chat".to_owned()
        } else {
            line.to_owned()
        };
    }
    let mut title: String = line.chars().take(MAX - 1).collect();
    title.push('…');
    title
}

impl Store {
    /// Stores the user's message and opens the assistant's, before the model is called.
    pub async fn begin_turn(&self, thread_id: &str, prompt: &str) -> Result<TurnStart, StoreError> {
        self.open_turn(thread_id, prompt, None, None).await
    }

    /// Like [`Store::begin_turn`], for a question Cairn wrote on the user's behalf:
    /// the model reads `prompt`, the window shows `shown` ("Run plan p1").
    pub async fn begin_turn_shown(
        &self,
        thread_id: &str,
        prompt: &str,
        shown: &str,
    ) -> Result<TurnStart, StoreError> {
        self.open_turn(thread_id, prompt, Some(shown), None).await
    }

    /// Stores the follow-up of a hand-over as a synthetic user message, opens the
    /// answer, and gives the thread to `handover.to`.
    pub async fn begin_handover(
        &self,
        thread_id: &str,
        handover: &Handover,
        follow_up: &str,
    ) -> Result<TurnStart, StoreError> {
        self.open_turn(thread_id, follow_up, None, Some(handover))
            .await
    }

    async fn open_turn(
        &self,
        thread_id: &str,
        prompt: &str,
        shown: Option<&str>,
        handover: Option<&Handover>,
    ) -> Result<TurnStart, StoreError> {
        let now = now_ms();
        let (user_id, assistant_id) = (new_id(), new_id());
        let mut tx = self.write().await?;
        let seq: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE thread_id = ?")
                .bind(thread_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(|err| self.err(err))?;
        if !touch_thread(self, &mut tx, thread_id, now).await? {
            return Err(StoreError::NotFound {
                kind: "thread",
                id: thread_id.to_owned(),
            });
        }
        let handover_json = handover
            .map(serde_json::to_string)
            .transpose()
            .map_err(|err| StoreError::Invalid(format!("cannot encode the hand-over: {err}")))?;
        let question = NewMessage {
            id: &user_id,
            seq: seq + 1,
            role: Role::User,
            content: prompt,
            shown,
            status: MessageStatus::Complete,
            handover: handover_json.as_deref(),
        };
        insert_message(self, &mut tx, thread_id, question, now).await?;
        let answer = NewMessage::opening_answer(&assistant_id, seq + 2);
        insert_message(self, &mut tx, thread_id, answer, now).await?;
        if let Some(handover) = handover {
            sqlx::query("UPDATE threads SET agent = ? WHERE id = ?")
                .bind(&handover.to)
                .bind(thread_id)
                .execute(&mut *tx)
                .await
                .map_err(|err| self.err(err))?;
        }
        tx.commit().await.map_err(|err| self.err(err))?;
        let mut user = user_message(user_id, thread_id, prompt.to_owned(), now, now);
        user.shown = shown.map(str::to_owned);
        user.synthetic = handover.is_some();
        user.handover = handover.cloned();
        Ok(TurnStart { user, assistant_id })
    }

    /// Answers the thread's last question again: its answer at the end of the thread
    /// gives way to a fresh one (the question is not stored again; an edit rewrites
    /// it in place). The files the old answer wrote, not yet put back, pass to the
    /// new one where `carry` says so: Restore on it still reaches back to before the
    /// question.
    pub async fn redo_turn(
        &self,
        thread_id: &str,
        redo: Redo<'_>,
        carry: &(dyn Fn(&FileCheckpoint) -> bool + Sync),
    ) -> Result<TurnStart, StoreError> {
        let now = now_ms();
        let mut tx = self.write().await?;
        let last: Vec<LastRow> = sqlx::query_as(
            "SELECT id, seq, role, status, content, synthetic, created_at, updated_at \
             FROM messages WHERE thread_id = ? ORDER BY seq DESC LIMIT 2",
        )
        .bind(thread_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(|err| self.err(err))?;
        let (answer, question) = match last.as_slice() {
            [answer, question]
                if answer.role == Role::Assistant.as_str()
                    && question.role == Role::User.as_str() =>
            {
                (answer, question)
            }
            _ => {
                return Err(StoreError::Invalid(
                    "there is no answer to give again".into(),
                ));
            }
        };
        let failed = answer.status == MessageStatus::Failed.as_str();
        let content = match redo {
            Redo::Failed if !failed => {
                return Err(StoreError::Invalid(
                    "only a failed answer at the end of a chat can be retried".into(),
                ));
            }
            Redo::Edited(_) if question.synthetic => {
                return Err(StoreError::Invalid(
                    "the last message was written by Cairn when the agent changed, not by you: \
                     there is nothing of yours to edit"
                        .into(),
                ));
            }
            Redo::Edited(text) if text.trim().is_empty() => {
                return Err(StoreError::Invalid(
                    "an edited question cannot be empty".into(),
                ));
            }
            Redo::Edited(text) => {
                sqlx::query("UPDATE messages SET content = ?, updated_at = ? WHERE id = ?")
                    .bind(text)
                    .bind(now)
                    .bind(&question.id)
                    .execute(&mut *tx)
                    .await
                    .map_err(|err| self.err(err))?;
                text.to_owned()
            }
            Redo::Failed | Redo::Answer => question.content.clone(),
        };
        let assistant_id = new_id();
        // The writes are read before the old answer goes (its rows go with it) and
        // kept once the new one exists (they reference it).
        let written = crate::checkpoints::unrestored_writes(self, &mut tx, &answer.id).await?;
        sqlx::query("DELETE FROM messages WHERE id = ?")
            .bind(&answer.id)
            .execute(&mut *tx)
            .await
            .map_err(|err| self.err(err))?;
        let opening = NewMessage::opening_answer(&assistant_id, answer.seq);
        insert_message(self, &mut tx, thread_id, opening, now).await?;
        for file in written.iter().filter(|file| carry(file)) {
            crate::checkpoints::insert_write(self, &mut tx, &assistant_id, file).await?;
        }
        touch_thread(self, &mut tx, thread_id, now).await?;
        tx.commit().await.map_err(|err| self.err(err))?;
        let updated = if matches!(redo, Redo::Edited(_)) {
            now
        } else {
            question.updated_at
        };
        let mut user = user_message(
            question.id.clone(),
            thread_id,
            content,
            question.created_at,
            updated,
        );
        user.synthetic = question.synthetic;
        Ok(TurnStart { user, assistant_id })
    }

    /// Writes the assistant message as it stands (a turn still running).
    pub async fn save_assistant(
        &self,
        thread_id: &str,
        id: &str,
        snapshot: AnswerSnapshot<'_>,
    ) -> Result<(), StoreError> {
        let mut tx = self.write().await?;
        update_assistant(self, &mut tx, thread_id, id, snapshot).await?;
        tx.commit().await.map_err(|err| self.err(err))
    }

    /// A thread's messages in order, execution trees included.
    pub async fn messages(&self, thread_id: &str) -> Result<Vec<MessageView>, StoreError> {
        self.reader.messages(thread_id).await
    }

    /// The model-facing history of a thread: what the next turn sends before the new
    /// prompt.
    pub async fn history(&self, thread_id: &str) -> Result<Vec<ChatMessage>, StoreError> {
        self.reader.history(thread_id).await
    }
}

/// How [`Store::redo_turn`] answers the last question again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redo<'a> {
    /// Retry: only a failed answer, to the same question.
    Failed,
    /// Regenerate: any answer that ended, to the same question.
    Answer,
    /// Edit and resend: the question rewritten as this, then answered.
    Edited(&'a str),
}

/// One of the last messages of a thread, as `redo_turn` checks them.
#[derive(sqlx::FromRow)]
struct LastRow {
    id: String,
    seq: i64,
    role: String,
    status: String,
    content: String,
    synthetic: bool,
    created_at: i64,
    updated_at: i64,
}

/// A user's message as stored: complete from the start.
fn user_message(
    id: String,
    thread_id: &str,
    content: String,
    created_at: i64,
    updated_at: i64,
) -> MessageView {
    MessageView {
        id,
        thread_id: thread_id.to_owned(),
        role: Role::User,
        content,
        reasoning: None,
        execution_tree: None,
        usage: None,
        status: MessageStatus::Complete,
        error: None,
        synthetic: false,
        handover: None,
        created_at,
        updated_at,
        restorable: Vec::new(),
        shown: None,
    }
}

/// Rewrites an assistant message (and touches its thread) inside a transaction.
pub(crate) async fn update_assistant(
    store: &Store,
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    thread_id: &str,
    id: &str,
    snapshot: AnswerSnapshot<'_>,
) -> Result<(), StoreError> {
    let encode = |value: Result<String, serde_json::Error>| {
        value.map_err(|err| StoreError::Invalid(format!("cannot encode the message: {err}")))
    };
    let replay = encode(serde_json::to_string(snapshot.replay))?;
    let tree = encode(serde_json::to_string(snapshot.tree))?;
    let usage = snapshot
        .usage
        .map(|usage| encode(serde_json::to_string(usage)))
        .transpose()?;
    let now = now_ms();
    sqlx::query(
        "UPDATE messages SET content = ?, reasoning = ?, replay = ?, execution_tree = ?, \
         usage = COALESCE(?, usage), status = ?, error = ?, updated_at = ? WHERE id = ?",
    )
    .bind(snapshot.content)
    .bind((!snapshot.reasoning.is_empty()).then_some(snapshot.reasoning))
    .bind(replay)
    .bind(tree)
    .bind(usage)
    .bind(snapshot.status.as_str())
    .bind(snapshot.error)
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(|err| store.err(err))?;
    touch_thread(store, tx, thread_id, now).await?;
    Ok(())
}

/// Marks a thread changed at `now`; `false` when there is no such thread.
async fn touch_thread(
    store: &Store,
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    thread_id: &str,
    now: i64,
) -> Result<bool, StoreError> {
    let touched = sqlx::query("UPDATE threads SET updated_at = ? WHERE id = ?")
        .bind(now)
        .bind(thread_id)
        .execute(&mut **tx)
        .await
        .map_err(|err| store.err(err))?;
    Ok(touched.rows_affected() > 0)
}

/// A message row about to be stored.
struct NewMessage<'a> {
    id: &'a str,
    seq: i64,
    role: Role,
    content: &'a str,
    /// What the window shows in place of `content` (see [`Store::begin_turn_shown`]).
    shown: Option<&'a str>,
    status: MessageStatus,
    /// JSON of the hand-over a synthetic message continues.
    handover: Option<&'a str>,
}

impl<'a> NewMessage<'a> {
    /// The empty assistant message a turn fills in as it runs.
    fn opening_answer(id: &'a str, seq: i64) -> Self {
        Self {
            id,
            seq,
            role: Role::Assistant,
            content: "",
            shown: None,
            status: MessageStatus::Partial,
            handover: None,
        }
    }
}

async fn insert_message(
    store: &Store,
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    thread_id: &str,
    message: NewMessage<'_>,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO messages (id, thread_id, seq, role, content, shown, status, synthetic, \
         handover, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(message.id)
    .bind(thread_id)
    .bind(message.seq)
    .bind(message.role.as_str())
    .bind(message.content)
    .bind(message.shown)
    .bind(message.status.as_str())
    .bind(message.handover.is_some())
    .bind(message.handover)
    .bind(now)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|err| store.err(err))?;
    Ok(())
}

/// An assistant message as the model should see it again.
///
/// A finished turn replays exactly what it journaled. A turn the app did not see end
/// (a crash, a kill) may have journaled a call but not its result, and may have
/// streamed text after its last journaled message: calls get an explicit error
/// result, so the next request is valid, and the unjournaled text is kept.
pub(crate) fn replayable(content: &str, replay: Vec<ChatMessage>) -> Vec<ChatMessage> {
    if replay.is_empty() {
        return if content.is_empty() {
            Vec::new()
        } else {
            vec![ChatMessage::assistant(content)]
        };
    }
    let journaled: Vec<&str> = replay
        .iter()
        .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
        .map(ChatMessage::content)
        .filter(|text| !text.is_empty())
        .collect();
    let journaled = journaled.join("\n\n");
    let remainder = content
        .strip_prefix(journaled.as_str())
        .map(|rest| rest.trim_start_matches('\n'))
        .filter(|rest| !rest.is_empty())
        .map(str::to_owned);

    let mut out = Vec::with_capacity(replay.len() + 2);
    let mut unanswered: Vec<(String, String)> = Vec::new();
    let close = |out: &mut Vec<ChatMessage>, unanswered: &mut Vec<(String, String)>| {
        for (id, name) in unanswered.drain(..) {
            out.push(ChatMessage::Tool {
                tool_call_id: id,
                name,
                content: "Error: Cairn stopped before this call finished; it may not have run"
                    .into(),
                is_error: true,
                images: Vec::new(),
            });
        }
    };
    for message in replay {
        match &message {
            ChatMessage::Tool { tool_call_id, .. } => {
                unanswered.retain(|(id, _)| id != tool_call_id)
            }
            _ => {
                close(&mut out, &mut unanswered);
                unanswered = message
                    .tool_calls()
                    .iter()
                    .map(|call| (call.id.clone(), call.name.clone()))
                    .collect();
            }
        }
        out.push(message);
    }
    close(&mut out, &mut unanswered);
    if let Some(remainder) = remainder {
        out.push(ChatMessage::assistant(remainder));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_protocol::ToolCall;

    fn calls(ids: &[&str]) -> ChatMessage {
        ChatMessage::Assistant {
            content: "Looking.".into(),
            reasoning: None,
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: (*id).into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                    written: None,
                })
                .collect(),
        }
    }

    fn result(id: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "read_file".into(),
            content: "ok".into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    #[test]
    fn a_finished_turn_replays_exactly() {
        let replay = vec![calls(&["a"]), result("a"), ChatMessage::assistant("Done.")];
        assert_eq!(replayable("Looking.\n\nDone.", replay.clone()), replay);
    }

    #[test]
    fn a_crashed_turn_is_repaired_into_a_valid_history() {
        let replay = vec![calls(&["a", "b"]), result("a")];
        let repaired = replayable("Looking.\n\nHalf an ans", replay);
        assert_eq!(repaired.len(), 4);
        assert_eq!(repaired[1], result("a"));
        assert!(
            matches!(&repaired[2], ChatMessage::Tool { tool_call_id, is_error: true, .. } if tool_call_id == "b")
        );
        assert_eq!(repaired[3], ChatMessage::assistant("Half an ans"));
    }

    #[test]
    fn text_only_rows_replay_as_one_message() {
        assert_eq!(
            replayable("Hello", vec![]),
            [ChatMessage::assistant("Hello")]
        );
        assert!(replayable("", vec![]).is_empty());
    }

    #[test]
    fn titles_come_from_the_first_line() {
        assert_eq!(
            title_from_prompt("\n  Fix the build\nplease"),
            "Fix the build"
        );
        assert_eq!(title_from_prompt("   "), "New chat");
        let long = title_from_prompt(&"word ".repeat(30));
        assert_eq!(long.chars().count(), 60);
        assert!(long.ends_with('…'));
    }
}
