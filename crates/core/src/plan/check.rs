//! What makes a plan one the engine can run; each problem is a tool error the model
//! can fix.

use std::collections::{HashMap, HashSet};
use std::fmt::Display;

use cairn_protocol::PlanStep;

/// What keeps a plan from running, in the words the model is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PlanProblem {
    #[error("a plan needs at least one step")]
    NoSteps,
    #[error("every step needs an `id` (s1, s2, …)")]
    NoId,
    #[error("two steps are named `{0}`; give each its own id")]
    SameId(String),
    #[error("step `{0}` has no instructions")]
    NoInstructions(String),
    #[error("step `{step}` depends on `{missing}`, which is not a step of this plan")]
    UnknownDependency { step: String, missing: String },
    #[error("step `{step}` asks for the tool `{tool}`, which you do not have")]
    UnknownTool { step: String, tool: String },
    #[error("step `{step}`: {reason}")]
    Agent { step: String, reason: String },
    #[error(
        "the steps depend on each other in a circle: {}; a step can only wait for steps \
         that do not wait for it",
        .0.join(" → ")
    )]
    Circle(Vec<String>),
}

/// Checks `steps`: `has_tool` and `agent` say which tools and profiles a step may name.
pub(crate) fn check<E: Display>(
    steps: &[PlanStep],
    has_tool: impl Fn(&str) -> bool,
    agent: impl Fn(&str) -> Result<(), E>,
) -> Result<(), PlanProblem> {
    if steps.is_empty() {
        return Err(PlanProblem::NoSteps);
    }
    let mut ids = HashSet::new();
    for step in steps {
        if step.id.trim().is_empty() {
            return Err(PlanProblem::NoId);
        }
        if !ids.insert(step.id.as_str()) {
            return Err(PlanProblem::SameId(step.id.clone()));
        }
        if step.instructions.trim().is_empty() {
            return Err(PlanProblem::NoInstructions(step.id.clone()));
        }
    }
    for step in steps {
        if let Some(missing) = step.depends_on.iter().find(|id| !ids.contains(id.as_str())) {
            return Err(PlanProblem::UnknownDependency {
                step: step.id.clone(),
                missing: missing.clone(),
            });
        }
        if let Some(unknown) = step
            .tools
            .iter()
            .flatten()
            .find(|name| !has_tool(name.as_str()))
        {
            return Err(PlanProblem::UnknownTool {
                step: step.id.clone(),
                tool: unknown.clone(),
            });
        }
        if let Some(id) = &step.agent {
            agent(id).map_err(|err| PlanProblem::Agent {
                step: step.id.clone(),
                reason: err.to_string(),
            })?;
        }
    }
    if let Some(cycle) = cycle(steps) {
        return Err(PlanProblem::Circle(cycle));
    }
    Ok(())
}

/// A chain of dependencies that comes back to where it started, if there is one.
fn cycle(steps: &[PlanStep]) -> Option<Vec<String>> {
    let needs: HashMap<&str, &[String]> = steps
        .iter()
        .map(|step| (step.id.as_str(), step.depends_on.as_slice()))
        .collect();
    // Depth-first, each step visited once: 1 while on the path, 2 once cleared.
    let mut state: HashMap<&str, u8> = HashMap::new();
    let mut path: Vec<&str> = Vec::new();
    fn visit<'a>(
        id: &'a str,
        needs: &HashMap<&'a str, &'a [String]>,
        state: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(id) {
            Some(2) => return None,
            Some(_) => {
                let start = path.iter().position(|seen| *seen == id).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[start..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(id.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        state.insert(id, 1);
        path.push(id);
        for next in needs.get(id).copied().unwrap_or_default() {
            if let Some(cycle) = visit(next, needs, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state.insert(id, 2);
        None
    }
    steps
        .iter()
        .find_map(|step| visit(&step.id, &needs, &mut state, &mut path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(id: &str, depends_on: &[&str]) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: id.to_uppercase(),
            instructions: format!("do {id}"),
            tools: None,
            agent: None,
            depends_on: depends_on.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn plain(steps: &[PlanStep]) -> Result<(), String> {
        check(
            steps,
            |name| name == "read_file",
            |id| {
                if id == "explore" {
                    Ok(())
                } else {
                    Err(format!("there is no agent `{id}`"))
                }
            },
        )
        .map_err(|problem| problem.to_string())
    }

    #[test]
    fn a_plan_with_a_diamond_of_dependencies_is_fine() {
        let steps = [
            step("a", &[]),
            step("b", &["a"]),
            step("c", &["a"]),
            step("d", &["b", "c"]),
        ];
        assert_eq!(plain(&steps), Ok(()));
    }

    #[test]
    fn every_bad_plan_says_what_to_fix() {
        let mut with_tool = step("a", &[]);
        with_tool.tools = Some(vec!["write_file".into()]);
        let mut with_agent = step("a", &[]);
        with_agent.agent = Some("ghost".into());
        let mut blank = step("a", &[]);
        blank.instructions = " ".into();
        let cases: Vec<(Vec<PlanStep>, &str)> = vec![
            (vec![], "at least one step"),
            (
                vec![step("a", &[]), step("a", &[])],
                "two steps are named `a`",
            ),
            (
                vec![step("a", &["zz"])],
                "depends on `zz`, which is not a step",
            ),
            (
                vec![step("a", &["b"]), step("b", &["a"])],
                "in a circle: a → b → a",
            ),
            (vec![step("a", &["a"])], "in a circle: a → a"),
            (
                vec![with_tool],
                "the tool `write_file`, which you do not have",
            ),
            (vec![with_agent], "step `a`: there is no agent `ghost`"),
            (vec![blank], "step `a` has no instructions"),
            (vec![step("", &[])], "needs an `id`"),
        ];
        for (steps, expected) in cases {
            let err = plain(&steps).unwrap_err();
            assert!(err.contains(expected), "{steps:?}: {err}");
        }
    }
}
