//! What a turn keeps for its levels and for its end: the whole of every result it
//! cut (for `read_tool_result`), where the thread's plans are kept, the plan it left
//! as a draft, and the hand-over a `switch_agent` call asked for.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::agent::AgentSwitch;
use crate::plan::{PlanBook, StoredPlan};
use crate::results::KeptResults;
use crate::switch::NoHandOver;

pub(crate) struct Keeps {
    /// The whole of every result cut for the model.
    pub(crate) results: KeptResults,
    /// Where the thread's plans are kept.
    pub(crate) plans: Arc<dyn PlanBook>,
    /// The plan kept as a draft this turn: the turn's `plan_ready` names it.
    draft: Mutex<Option<StoredPlan>>,
    /// The hand-over a `switch_agent` call asked for; the first one wins.
    switch: OnceLock<AgentSwitch>,
}

impl Keeps {
    pub fn new(plans: Arc<dyn PlanBook>) -> Self {
        Self {
            results: KeptResults::default(),
            plans,
            draft: Mutex::new(None),
            switch: OnceLock::new(),
        }
    }

    /// Keeps `plan` as the turn's draft.
    pub fn note_draft(&self, plan: StoredPlan) {
        *self.draft.lock().unwrap_or_else(PoisonError::into_inner) = Some(plan);
    }

    /// The plan kept as the turn's draft, taken as the turn ends.
    pub fn take_draft(&self) -> Option<StoredPlan> {
        self.draft
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Asks for the thread to be handed over once the turn ends; a later request is
    /// refused with the profile the first one named.
    pub fn hand_over(&self, switch: AgentSwitch) -> Result<(), NoHandOver> {
        self.switch.set(switch).map_err(|refused| {
            NoHandOver::AlreadyHandingOver(
                self.switch
                    .get()
                    .map_or(refused.to, |first| first.to.clone()),
            )
        })
    }

    /// The hand-over asked for, if one was.
    pub fn switch(&self) -> Option<AgentSwitch> {
        self.switch.get().cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MemoryPlans;

    fn switch(to: &str) -> AgentSwitch {
        AgentSwitch {
            from: "router".into(),
            to: to.into(),
            reason: None,
            follow_up: "Continue.".into(),
        }
    }

    #[test]
    fn the_first_hand_over_wins_and_a_later_one_hears_where_it_goes() {
        let keeps = Keeps::new(Arc::new(MemoryPlans::default()));
        assert_eq!(keeps.switch(), None);
        keeps.hand_over(switch("reviewer")).unwrap();
        assert_eq!(
            keeps.hand_over(switch("writer")),
            Err(NoHandOver::AlreadyHandingOver("reviewer".into()))
        );
        assert_eq!(keeps.switch().map(|s| s.to), Some("reviewer".into()));
    }
}
