mod approvals;
mod bad_input;
mod basics;
mod budgets;
mod cancel;
mod parallel;
mod subtasks;
mod support;
