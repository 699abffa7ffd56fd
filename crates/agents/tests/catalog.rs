//! Profiles from real folders: precedence, inheritance and every file refused.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use cairn_agents::{AgentDirs, Catalog};
use cairn_protocol::AgentSource;

struct Folders {
    _root: tempfile::TempDir,
    user: PathBuf,
    workspace: PathBuf,
}

impl Folders {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let user = root.path().join("config-agents");
        let workspace = root.path().join("project");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(workspace.join(".cairn/agents")).unwrap();
        Self {
            _root: root,
            user,
            workspace,
        }
    }

    fn user(&self, name: &str, text: &str) -> &Self {
        std::fs::write(self.user.join(name), text).unwrap();
        self
    }

    fn project(&self, name: &str, text: &str) -> &Self {
        std::fs::write(self.workspace.join(".cairn/agents").join(name), text).unwrap();
        self
    }

    fn load(&self) -> Catalog {
        Catalog::load(&AgentDirs::new(
            Some(self.user.clone()),
            Some(&self.workspace),
        ))
    }
}

fn error_of<'a>(catalog: &'a Catalog, id: &str) -> (&'a str, &'a str) {
    let info = catalog
        .problems()
        .find(|info| info.id == id)
        .unwrap_or_else(|| panic!("no problem reported for {id}: {:?}", catalog.infos()));
    (
        info.error.as_deref().unwrap(),
        info.path.as_deref().unwrap_or(""),
    )
}

#[test]
fn the_builtins_are_chat_explore_auto_and_review() {
    let catalog = Catalog::builtin();
    let ids: Vec<&str> = catalog.agents().iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["auto", "chat", "explore", "review"]);
    let review = catalog.get("review").unwrap();
    assert!(review.hidden && !review.runnable);
    assert!(review.tools.allows("read_file") && !review.tools.allows("write_file"));
    assert!(catalog.problems().next().is_none());
    let chat = catalog.get("chat").unwrap();
    assert!(chat.tools.allows("write_file") && chat.tools.allows("mcp__x__y"));
    assert!(!chat.hidden && chat.runnable);
    let explore = catalog.get("explore").unwrap();
    assert!(explore.hidden);
    for read in ["read_file", "list_dir", "search_files", "memory_read"] {
        assert!(explore.tools.allows(read), "{read}");
    }
    for other in [
        "write_file",
        "edit_file",
        "run_command",
        "memory_write",
        "web_fetch",
    ] {
        assert!(!explore.tools.allows(other), "{other}");
    }
    let auto = catalog.get("auto").unwrap();
    assert!(auto.tools.allows("switch_agent") && auto.tools.allows("write_file"));
    assert!(!auto.runnable, "the router is not a subtask");
    assert!(auto.instructions.contains("switch_agent"));
    assert_eq!(catalog.visible_ids(), ["auto", "chat"]);
}

#[test]
fn a_later_source_replaces_an_earlier_profile_of_the_same_id() {
    let folders = Folders::new();
    folders
        .user(
            "chat.md",
            "---\ndescription: mine\ntools: {add: [read_file]}\n---\nBe brief.",
        )
        .user("writer.md", "---\ndescription: user writer\n---\n")
        .project(
            "writer.md",
            "---\ndescription: project writer\nmodel: big:70b\n---\n",
        );
    let catalog = folders.load();
    let chat = catalog.get("chat").unwrap();
    assert_eq!(chat.description, "mine");
    assert_eq!(chat.instructions, "Be brief.");
    assert!(!chat.tools.allows("write_file"));
    let writer = catalog.get("writer").unwrap();
    assert_eq!(writer.description, "project writer");
    assert_eq!(writer.model.as_deref(), Some("big:70b"));
    let sources: Vec<(&str, AgentSource)> = catalog
        .infos()
        .iter()
        .map(|info| (info.id.as_str(), info.source))
        .collect();
    assert!(sources.contains(&("chat", AgentSource::User)));
    assert!(sources.contains(&("writer", AgentSource::Workspace)));
    assert!(
        !sources.contains(&("writer", AgentSource::User)),
        "{sources:?}"
    );
}

#[test]
fn a_profile_inherits_instructions_and_tool_rules_from_its_base() {
    let folders = Folders::new();
    folders
        .user(
            "reviewer.md",
            "---\nbase: chat\ntools:\n  remove: ['write_file|edit_file|run_command']\n---\nReview.",
        )
        .project(
            "strict.md",
            "---\nbase: reviewer\ntemperature: 0.1\ntools: {add: [run_command]}\n---\nBe strict.",
        );
    let catalog = folders.load();
    let reviewer = catalog.get("reviewer").unwrap();
    assert!(reviewer.tools.allows("read_file"));
    assert!(!reviewer.tools.allows("write_file"));
    let strict = catalog.get("strict").unwrap();
    assert_eq!(strict.instructions, "Review.\n\nBe strict.");
    assert!(strict.tools.allows("run_command"), "a child may add back");
    assert!(!strict.tools.allows("edit_file"));
    assert_eq!(strict.temperature, Some(0.1));
}

#[test]
fn every_bad_file_is_skipped_with_its_path_and_reason() {
    let folders = Folders::new();
    folders
        .user("orphan.md", "---\nbase: nobody\n---\n")
        .user("ping.md", "---\nbase: pong\n---\n")
        .user("pong.md", "---\nbase: ping\n---\n")
        .user("regex.md", "---\ntools: {add: ['read_(']}\n---\n")
        .user("yaml.md", "---\ndescription: [oops\n---\n")
        .user("Upper.md", "---\n---\n")
        .user("child.md", "---\nbase: yaml\n---\n")
        .user("heir.md", "---\nbase: regex\n---\n")
        .user("notes.txt", "not a profile")
        .project("chat.md", "no front matter here");
    let catalog = folders.load();
    let (reason, path) = error_of(&catalog, "orphan");
    assert_eq!(reason, "its base `nobody` is unknown");
    assert!(path.ends_with("config-agents/orphan.md"), "{path}");
    // A cycle is said whole, as it was found, by each profile in it, not as a base
    // that cannot be used.
    for id in ["ping", "pong"] {
        assert_eq!(
            error_of(&catalog, id).0,
            "its bases form a cycle: ping → pong → ping"
        );
    }
    assert_eq!(
        error_of(&catalog, "heir").0,
        "its base `regex` cannot be used: `read_(` is not a valid regex: error: unclosed group"
    );
    assert!(
        error_of(&catalog, "regex")
            .0
            .contains("`read_(` is not a valid regex")
    );
    assert!(
        error_of(&catalog, "yaml")
            .0
            .contains("front matter is not valid")
    );
    assert!(error_of(&catalog, "Upper").0.contains("not a profile id"));
    // A base that could not be read is unknown to its children.
    assert!(error_of(&catalog, "child").0.contains("`yaml` is unknown"));
    // A broken file does not hide the profile it would have replaced.
    let (reason, path) = error_of(&catalog, "chat");
    assert!(reason.contains("front matter"), "{reason}");
    assert!(path.ends_with(".cairn/agents/chat.md"), "{path}");
    assert!(
        catalog
            .get("chat")
            .is_some_and(|chat| chat.tools.allows("write_file"))
    );
    for skipped in [
        "orphan", "ping", "pong", "regex", "yaml", "child", "heir", "notes",
    ] {
        assert!(catalog.get(skipped).is_none(), "{skipped}");
    }
}

#[test]
fn choosing_refuses_hidden_unknown_and_broken_profiles_with_the_visible_list() {
    let folders = Folders::new();
    folders.user("broken.md", "---\nbase: nowhere\n---\n");
    let catalog = folders.load();
    assert_eq!(catalog.choose("chat").unwrap().id, "chat");
    let hidden = catalog.choose("explore").unwrap_err().to_string();
    assert_eq!(
        hidden,
        "`explore` is an agent for subtasks only. Agents: auto, chat"
    );
    let unknown = catalog.choose("ghost").unwrap_err().to_string();
    assert_eq!(unknown, "there is no agent `ghost`. Agents: auto, chat");
    let broken = catalog.choose("broken").unwrap_err().to_string();
    assert!(
        broken.contains("could not be read") && broken.contains("broken.md"),
        "{broken}"
    );
}

#[test]
fn the_users_folder_moves_with_the_environment_and_defaults_to_the_config_folder() {
    let moved = AgentDirs::new(Some(PathBuf::from("/elsewhere")), Some(Path::new("/w")));
    assert_eq!(moved.user.as_deref(), Some(Path::new("/elsewhere")));
    assert_eq!(
        moved.workspace.as_deref(),
        Some(Path::new("/w/.cairn/agents"))
    );
    let default = AgentDirs::new(None, None);
    let user = default.user.unwrap();
    assert!(user.ends_with("cairn/agents"), "{}", user.display());
    // A folder that does not exist holds no profiles and is no error.
    let catalog = Catalog::load(&AgentDirs {
        user: Some(PathBuf::from("/nonexistent/agents")),
        workspace: None,
    });
    assert!(catalog.problems().next().is_none());
    assert_eq!(catalog.agents().len(), 4);
}

#[test]
fn the_readmes_example_profiles_load_as_described() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme
        .split("\n## Agents\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has an Agents section");
    let examples: Vec<&str> = section
        .split("```markdown\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .collect();
    assert_eq!(examples.len(), 2);
    let folders = Folders::new();
    folders
        .user("reviewer.md", examples[0])
        .user("finder.md", examples[1]);
    let catalog = folders.load();
    assert!(catalog.problems().next().is_none(), "{:?}", catalog.infos());
    let reviewer = catalog.get("reviewer").unwrap();
    assert_eq!(reviewer.model.as_deref(), Some("qwen2.5-coder:32b"));
    assert!(reviewer.tools.allows("read_file") && !reviewer.tools.allows("edit_file"));
    let finder = catalog.get("finder").unwrap();
    assert!(finder.hidden && finder.runnable);
    assert!(finder.tools.allows("search_files") && !finder.tools.allows("write_file"));
}

#[test]
fn roles_come_from_the_front_matter_and_the_most_local_profile_holds_each() {
    use cairn_core::AgentRole;
    let role_of = |catalog: &Catalog, id: &str| catalog.get(id).and_then(|agent| agent.role);
    let builtin = Catalog::builtin();
    assert_eq!(role_of(&builtin, "auto"), Some(AgentRole::Router));
    assert_eq!(role_of(&builtin, "review"), Some(AgentRole::Reviewer));
    assert_eq!(role_of(&builtin, "chat"), None);

    let folders = Folders::new();
    folders
        // A role is the profile's own: based on the router, it does not route.
        .user("quiet.md", "---\nbase: auto\n---\n")
        .user("strict.md", "---\nrole: reviewer\n---\nBe strict.\n")
        .user("janitor.md", "---\nrole: janitor\n---\n");
    let catalog = folders.load();
    assert_eq!(role_of(&catalog, "quiet"), None);
    assert_eq!(role_of(&catalog, "strict"), Some(AgentRole::Reviewer));
    assert_eq!(
        role_of(&catalog, "review"),
        None,
        "the user's reviewer replaces it"
    );
    assert_eq!(role_of(&catalog, "auto"), Some(AgentRole::Router));
    let setup = catalog.setup(catalog.get("chat").unwrap().clone(), None);
    assert_eq!(
        setup
            .with_role(AgentRole::Reviewer)
            .map(|agent| agent.id.as_str()),
        Some("strict")
    );
    let (reason, _) = error_of(&catalog, "janitor");
    assert!(reason.contains("unknown variant `janitor`"), "{reason}");
}
