//! The real app under WebDriver: tauri-driver drives WebKitWebDriver, which starts
//! the app binary; the app's engine talks to a fake OpenAI-compatible server in
//! this process. Needs an X display and a session bus (scripts/test gives both).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use thirtyfour::error::WebDriverErrorInner;
use thirtyfour::prelude::*;

/// The app the tests drive: the build cargo made for them, or the one `CAIRN_E2E_APP`
/// names. The desktop bench measures the release build that ships: the build cargo makes
/// for a bench also turns on what the dev-dependencies ask of shared crates, so its code
/// and its functions' names (which the link's startup order lists) are not the shipped
/// ones.
pub fn app() -> &'static str {
    static APP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    APP.get_or_init(|| {
        std::env::var("CAIRN_E2E_APP")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_cairn-desktop").to_owned())
    })
}

/// The app's binary as its running processes show it: [`app`] with its links resolved.
pub fn app_exe() -> PathBuf {
    Path::new(app())
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from(app()))
}

/// How long the UI (or the desktop around it) gets to show something before a test fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One app's world: its data folder (the database lives there across restarts).
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("cairn.db")
    }

    /// The user's folder of agent profiles, as the app finds it (XDG_CONFIG_HOME).
    pub fn agents_dir(&self) -> PathBuf {
        let dir = self.dir.path().join("home/.config/cairn/agents");
        std::fs::create_dir_all(&dir).expect("the agents folder");
        dir
    }

    /// The autostart entry the app writes for "Start Cairn when I log in".
    pub fn autostart_entry(&self) -> PathBuf {
        self.dir.path().join("home/.config/autostart/cairn.desktop")
    }

    /// The MCP servers file the app reads (absent unless a test writes it).
    pub fn mcp_config(&self) -> PathBuf {
        self.dir.path().join("mcp.json")
    }

    /// The "browser" the app's links open in: a script that writes down each address
    /// it is given, in [`Home::opened_links`]. (`xdg-open` falls back to `$BROWSER`
    /// on a desktop with no handlers; no test ever starts a real browser.)
    pub fn browser(&self) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.dir.path().join("browser.sh");
        let log = self.dir.path().join("opened-links.txt");
        let script = format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", log.display());
        std::fs::write(&path, script).expect("the browser script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("an executable browser script");
        path
    }

    /// The addresses the app handed to the browser so far.
    pub fn opened_links(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("opened-links.txt"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Where the shader spy writes what the page's main thread compiled
    /// (`tests/e2e/sksl_spy.c`).
    fn shader_log(&self) -> PathBuf {
        self.dir.path().join("sksl-spy.log")
    }

    /// A folder for a chat's workspace.
    pub fn workspace(&self) -> PathBuf {
        let path = self.dir.path().join("project");
        std::fs::create_dir_all(&path).expect("a workspace folder");
        path
    }
}

/// The screen a launch waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opens {
    Chat,
    FirstRun,
}

/// A running app and the drivers in front of it.
pub struct App {
    pub driver: WebDriver,
    tauri_driver: Driver,
    shader_log: PathBuf,
}

/// tauri-driver (and with it WebKitWebDriver), stopped however the test ends.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        // tauri-driver's WebKitWebDriver would outlive it and pile up test after test.
        for child in children_of(self.0.id()) {
            let _ = Command::new("kill")
                .args(["-9", &child.to_string()])
                .status();
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The ids of `parent`'s child processes.
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The command name in parentheses may hold spaces: fields count after it.
            let ppid: u32 = stat[stat.rfind(')')? + 2..]
                .split(' ')
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == parent).then_some(pid)
        })
        .collect()
}

/// `pid` and all its descendants.
pub fn tree_of(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut next = 0;
    while next < tree.len() {
        tree.extend(children_of(tree[next]));
        next += 1;
    }
    tree
}

/// The environment process `pid` started with, one `NAME=value` a line (empty if it
/// is gone).
pub fn environ_of(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|byte| *byte == 0)
        .filter(|var| !var.is_empty())
        .map(|var| String::from_utf8_lossy(var).into_owned())
        .collect()
}

/// The WebKit web process under the app `pid`, the one that runs its page.
pub fn web_process_of(pid: u32) -> Option<u32> {
    tree_of(pid).into_iter().find(|pid| {
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| comm.starts_with("WebKitWebProces"))
    })
}

/// What the app runs with: a home of its own, the test's database and model server.
pub fn app_env(home: &Home, base_url: &str) -> Vec<(&'static str, std::ffi::OsString)> {
    let user_home = home.dir.path().join("home");
    std::fs::create_dir_all(&user_home).expect("a home folder");
    vec![
        ("XDG_CONFIG_HOME", user_home.join(".config").into()),
        ("XDG_DATA_HOME", user_home.join(".local/share").into()),
        ("HOME", user_home.into()),
        ("CAIRN_DB", home.db().into()),
        ("CAIRN_MCP_CONFIG", home.mcp_config().into()),
        ("CAIRN_BASE_URL", base_url.into()),
        ("CAIRN_MODEL", "test-model".into()),
        ("BROWSER", home.browser().into()),
        // E2E_APP_LOG=debug shows what the app did when a wait times out.
        (
            "CAIRN_LOG",
            std::env::var_os("E2E_APP_LOG").unwrap_or_else(|| "warn".into()),
        ),
    ]
}

/// Two ports, one for tauri-driver and one for the WebKitWebDriver it starts, both
/// below the kernel's ephemeral range. A port from `bind(0)` lies inside that range,
/// where the kernel may give it to any outgoing connection in the moment before
/// WebKitWebDriver binds it; WebKitWebDriver then exits and tauri-driver drops every
/// request it forwards. Below the range only an explicit bind can take a port.
fn two_free_ports() -> (u16, u16) {
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let low = ephemeral_start.saturating_sub(12_000).max(1024);
    // Start where this process's id points, so runs side by side rarely probe alike.
    let span = u32::from(ephemeral_start - low);
    let offset = std::process::id() % span;
    let mut held = Vec::new();
    for step in 0..span {
        let port = low + ((offset + step * 7) % span) as u16;
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            held.push((port, listener));
            if held.len() == 2 {
                return (held[0].0, held[1].0);
            }
        }
    }
    panic!("no two free ports between {low} and {ephemeral_start}");
}

impl App {
    /// Starts the app over `home`'s database, talking to the model server at `base_url`.
    pub async fn launch(home: &Home, base_url: &str) -> Self {
        Self::launch_with(home, base_url, &[]).await
    }

    /// Like [`App::launch`], with more environment (`XDG_SESSION_TYPE=wayland`).
    pub async fn launch_with(home: &Home, base_url: &str, env: &[(&str, &str)]) -> Self {
        Self::start(home, base_url, env, &[], Opens::Chat).await
    }

    /// Like [`App::launch`], with arguments on the app's command line (`--hidden`).
    pub async fn launch_with_args(home: &Home, base_url: &str, args: &[&str]) -> Self {
        Self::start(home, base_url, &[], args, Opens::Chat).await
    }

    /// Like [`App::launch`], as a first launch: no model chosen (no `CAIRN_MODEL`), so
    /// the first-run screen shows.
    pub async fn launch_first_run(home: &Home, base_url: &str) -> Self {
        Self::start(home, base_url, &[], &[], Opens::FirstRun).await
    }

    async fn start(
        home: &Home,
        base_url: &str,
        env: &[(&str, &str)],
        args: &[&str],
        opens: Opens,
    ) -> Self {
        kill_strays();
        // thirtyfour's HTTP client needs rustls' crypto provider installed.
        drop(cairn_providers::http::client_builder());
        let (port, native_port) = two_free_ports();
        let tauri_driver = Command::new("tauri-driver")
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native_port.to_string(),
            ])
            .envs(
                app_env(home, base_url)
                    .into_iter()
                    .filter(|(name, _)| opens == Opens::Chat || *name != "CAIRN_MODEL"),
            )
            .envs(env.iter().copied())
            .env("LD_PRELOAD", shader_spy())
            .env("CAIRN_SKSL_SPY_LOG", home.shader_log())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map(Driver)
            .expect("tauri-driver runs (cargo install tauri-driver --locked)");
        wait_for_port(port, "tauri-driver").await;
        // tauri-driver listens once it has started WebKitWebDriver, not once that
        // listens: a session asked for before then is dropped.
        wait_for_port(native_port, "WebKitWebDriver").await;
        let mut caps = Capabilities::new();
        caps.set("browserName", "wry").expect("a capability");
        caps.set(
            "tauri:options",
            serde_json::json!({"application": app(), "args": args}),
        )
        .expect("a capability");
        let driver = new_session(port, caps).await;
        let app = Self {
            driver,
            tauri_driver,
            shader_log: home.shader_log(),
        };
        // The session starts before the wasm app mounts.
        app.wait_for(match opens {
            Opens::Chat => ".composer-input",
            Opens::FirstRun => ".first-run",
        })
        .await;
        app
    }

    /// Starts the app binary again over the same home, as a user launching it a second
    /// time would, and waits for that launch to end.
    pub async fn launch_again(home: &Home, base_url: &str) -> std::process::ExitStatus {
        let mut second = Command::new(app())
            .envs(app_env(home, base_url))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the app binary starts");
        let start = Instant::now();
        loop {
            if let Some(status) = second.try_wait().expect("the second launch's status") {
                return status;
            }
            if start.elapsed() > PATIENCE {
                let _ = second.kill();
                let _ = second.wait();
                panic!("a second launch kept running beside the first");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The environment the app's web process started with, one `NAME=value` a line.
    pub fn web_process_environ(&self) -> Vec<String> {
        let exe = app_exe();
        let apps = processes_running(&exe);
        let [app_pid] = apps.as_slice() else {
            panic!("one app runs: {apps:?}");
        };
        let web =
            web_process_of(app_pid.parse().expect("a process id")).expect("the app's web process");
        environ_of(web)
    }

    /// What the page's main thread has compiled since the last call, emptied: the
    /// integers Skia parsed there, one a line (`tests/e2e/sksl_spy.c`).
    pub fn take_shader_log(&self) -> String {
        take_file(&self.shader_log)
    }

    pub async fn quit(self) {
        let _ = self.driver.clone().quit().await;
        let Self {
            tauri_driver,
            shader_log,
            ..
        } = self;
        drop(tauri_driver);
        kill_strays();
        let compiled = take_file(&shader_log);
        assert!(
            compiled.is_empty(),
            "the page's main thread compiled a Skia shader (integers parsed: {}): something \
             on the page is drawn blurred, and without a GPU that can abort the page \
             (src-tauri/rendering.rs)",
            compiled.split_whitespace().collect::<Vec<_>>().join(" ")
        );
    }

    /// The first element matching `css`, once there is one.
    pub async fn wait_for(&self, css: &str) -> WebElement {
        self.wait_until(css, |_| true, "to appear").await
    }

    /// The first element matching `css` whose text contains `needle`.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> WebElement {
        self.wait_until(
            css,
            |text| text.contains(needle),
            &format!("to contain {needle:?}"),
        )
        .await
    }

    async fn wait_until(&self, css: &str, good: impl Fn(&str) -> bool, what: &str) -> WebElement {
        let start = Instant::now();
        let mut seen = Vec::new();
        while start.elapsed() < PATIENCE {
            seen.clear();
            if let Ok(found) = self.driver.find_all(By::Css(css)).await {
                for element in found {
                    let text = text_of(&element).await;
                    if good(&text) {
                        return element;
                    }
                    seen.push(text);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.screenshot("timeout").await;
        let html = self
            .driver
            .execute(
                "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.outerHTML);",
                vec![serde_json::json!(css)],
            )
            .await
            .map(|found| found.json().clone())
            .unwrap_or_default();
        // A session that went invalid means the app is gone: say whether it is, so a
        // crash or a hand-over to another instance reads apart from a slow page.
        let app = app_exe();
        let running = processes_running(&app);
        panic!(
            "waited {PATIENCE:?} for `{css}` {what}; saw {seen:?} in {html}; \
             app processes running now: {running:?}"
        );
    }

    /// How many elements match `css` now.
    pub async fn count(&self, css: &str) -> usize {
        self.driver
            .find_all(By::Css(css))
            .await
            .map(|all| all.len())
            .unwrap_or(0)
    }

    /// Clicks the first element matching `css`. When the page replaced that node
    /// between finding and clicking it (a re-render as an event lands), the click goes
    /// to the node there now, as a user's would; any other failure is the test's.
    pub async fn click(&self, css: &str) {
        let start = Instant::now();
        loop {
            match self.wait_for(css).await.click().await {
                Ok(()) => return,
                Err(error)
                    if matches!(*error, WebDriverErrorInner::StaleElementReference(..))
                        && start.elapsed() < PATIENCE =>
                {
                    continue;
                }
                Err(error) => panic!("clicking `{css}`: {error}"),
            }
        }
    }

    /// Opens the chat titled `title` from the sidebar, once it is listed.
    pub async fn open_chat(&self, title: &str) {
        self.wait_for_text(".thread-title", title)
            .await
            .click()
            .await
            .unwrap_or_else(|err| panic!("opening the chat {title:?}: {err}"));
    }

    /// Opens the first-run screen's "Use another server" section. The search for
    /// servers above it is let finish first: its result moves the section down, and a
    /// click aimed before that move lands beside it and leaves the section shut.
    pub async fn open_custom_server(&self) {
        self.wait_for_js(
            "return !document.querySelector('.first-run-card').textContent\
             .includes('Looking for model servers');",
        )
        .await;
        self.click(".custom-server summary").await;
        self.wait_for_js("return document.querySelector('.custom-server').open === true;")
            .await;
    }

    /// Puts the pointer over the middle of the first element matching `css`.
    pub async fn hover(&self, css: &str) {
        let element = self.wait_for(css).await;
        self.driver
            .action_chain()
            .move_to_element_center(&element)
            .perform()
            .await
            .unwrap_or_else(|err| panic!("moving the pointer over `{css}`: {err}"));
    }

    /// Types into the composer and sends with Enter.
    pub async fn send(&self, text: &str) {
        let input = self.wait_for(".composer-input").await;
        input.send_keys(text).await.expect("typing");
        input.send_keys(Key::Enter).await.expect("Enter");
    }

    /// Presses a key in the composer, where the focus sits while a turn runs.
    pub async fn press(&self, key: Key) {
        let input = self.wait_for(".composer-input").await;
        input.send_keys(key).await.expect("a key press");
    }

    /// Presses Ctrl and `key` together in the composer.
    pub async fn press_chord(&self, key: &str) {
        let input = self.wait_for(".composer-input").await;
        input
            .send_keys(Key::Control + key)
            .await
            .expect("a key chord");
    }

    /// Resizes the window, and returns once the page is laid out at the new width:
    /// a click aimed before that lands where the element was. (At 800 px the
    /// composer's row wraps its folder button under the others; a click sent as the
    /// window shrank opened nothing, and the test waited for a popover that never came.)
    pub async fn resize(&self, width: u32, height: u32) {
        self.driver
            .set_window_rect(0, 0, width, height)
            .await
            .expect("resizing the window");
        self.wait_for_js(&format!("return window.innerWidth === {width};"))
            .await;
        // The frame that lays out the new width, and one after it.
        self.driver
            .execute_async(
                "const done = arguments[arguments.length - 1]; \
                 requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                Vec::new(),
            )
            .await
            .expect("waiting for two frames");
    }

    /// Gives the new chat a workspace folder through the folder popover.
    pub async fn choose_workspace(&self, folder: &Path) {
        self.click(".workspace-button").await;
        let path = self.wait_for(".workspace-path").await;
        path.clear().await.expect("clearing");
        path.send_keys(folder.display().to_string())
            .await
            .expect("typing");
        self.click(".workspace-use").await;
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        self.wait_for_text(".workspace-button", name).await;
    }

    /// Picks `value` in the `<select>` at `css`, as its native popup would.
    pub async fn choose_in(&self, css: &str, value: &str) {
        let select = self.wait_for(css).await;
        self.driver
            .execute(
                "arguments[0].value = arguments[1]; \
                 arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
                vec![
                    select.to_json().expect("an element"),
                    serde_json::json!(value),
                ],
            )
            .await
            .expect("choosing an option");
    }

    pub async fn choose_mode(&self, mode: &str) {
        // The native popup of a <select> is outside the page WebDriver sees: choose
        // the option as the popup would, with the change event the app listens to.
        let select = self.wait_for(".mode-select").await;
        self.driver
            .execute(
                "arguments[0].value = arguments[1]; \
                 arguments[0].dispatchEvent(new Event('change', {bubbles: true}));",
                vec![
                    select.to_json().expect("an element"),
                    serde_json::json!(mode),
                ],
            )
            .await
            .expect("choosing a mode");
    }

    /// Moves the X input focus off the app, as switching to another app would.
    pub async fn unfocus_window(&self) {
        crate::session::focus_elsewhere();
        assert!(!crate::session::app_has_focus(), "the focus left the app");
        // The X server moved the focus; the app learns it from an event it handles
        // in its own time. Once the page sees it, the window does too.
        self.wait_for_js("return !document.hasFocus();").await;
    }

    /// Puts the X input focus in the app's window, as clicking into it would.
    pub async fn focus_window(&self) {
        crate::session::focus_app_window();
        assert!(crate::session::app_has_focus(), "the app has the focus");
        self.wait_for_js("return document.hasFocus();").await;
    }

    /// Runs `script` in the page and returns what it returns.
    pub async fn js(&self, script: &str) -> serde_json::Value {
        self.driver
            .execute(script, Vec::new())
            .await
            .map(|ret| ret.json().clone())
            .unwrap_or_else(|err| panic!("running {script:?}: {err}"))
    }

    /// Waits until `script` returns true in the page.
    pub async fn wait_for_js(&self, script: &str) {
        self.wait_for_js_within(script, PATIENCE).await;
    }

    /// [`App::wait_for_js`] for work whose time is not the app's: a real model's
    /// answer on a machine that may be busy (a 1,500-token prompt is minutes there).
    pub async fn wait_for_js_within(&self, script: &str, patience: Duration) {
        let start = Instant::now();
        while start.elapsed() < patience {
            if self.js(script).await == serde_json::Value::Bool(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.screenshot("timeout").await;
        panic!("waited {patience:?} for `{script}`");
    }

    /// The last answer as a reader goes through it: each level's text (`depth text
    /// …`) and cards (`depth card LABEL`) in the order shown, open cards' insides
    /// under them. Labels are read as text, not as laid out: a finished answer's cards
    /// out of view are not laid out at all (`content-visibility: auto`).
    pub async fn outline(&self) -> Vec<String> {
        let lines = self
            .js(
                "const out = []; \
                 const walk = (el, depth) => { for (const child of el.children) { \
                   if (child.matches('.md')) { out.push(depth + ' text ' + child.innerText.trim()); } \
                   else if (child.matches('.card')) { \
                     out.push(depth + ' card ' + child.querySelector(':scope > .card-head .card-label').textContent.trim()); \
                     const body = child.querySelector(':scope > .card-body'); \
                     if (body) { walk(body, depth + 1); } } } }; \
                 const turns = document.querySelectorAll('.message.assistant .turn'); \
                 walk(turns[turns.length - 1], 0); return out;",
            )
            .await;
        serde_json::from_value(lines).expect("the outline is a list of lines")
    }

    /// The whole thread as a reader goes through it, one line per entry: its kind
    /// (user, cairn, divider, answer) and its text, without the controls to answer
    /// again (they are for the last entries only, and the reading is the point).
    pub async fn thread_lines(&self) -> Vec<String> {
        let lines = self
            .js(
                "return [...document.querySelectorAll('.messages > *')].map(el => { \
                   const kind = el.matches('.handover') ? 'divider' \
                     : el.matches('.message.synthetic') ? 'cairn' \
                     : el.matches('.message.user') ? 'user' \
                     : el.matches('.message.assistant') ? 'answer' : 'other'; \
                   let text = el.innerText; \
                   for (const control of el.querySelectorAll('.answer-actions, .edit-question, .copy-question')) { \
                     text = text.replace(control.innerText, ''); } \
                   return kind + ' ' + text.trim().replace(/\\s+/g, ' '); });",
            )
            .await;
        serde_json::from_value(lines).expect("the thread is a list of lines")
    }

    /// Saves what the window shows to `target/…/e2e-screenshots/NAME.png`.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-screenshots");
        std::fs::create_dir_all(&dir).expect("the screenshot folder");
        let path = dir.join(format!("{name}.png"));
        // A capture that fails must not leave an earlier run's picture to be judged.
        let _ = std::fs::remove_file(&path);
        // What the DOM holds is painted at the next rendering update (cards far from
        // the screen are laid out only once they come near it): capture after it, or
        // a card just scrolled to is captured blank. A hidden window runs no frames,
        // so a timer ends the wait there.
        let _ = self
            .driver
            .execute_async(
                "const done = arguments[arguments.length - 1]; \
                 setTimeout(done, 500); \
                 requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                Vec::new(),
            )
            .await;
        // WebKitWebDriver answers a screenshot after the page's next paint. Without
        // compositing (the app's choice without a GPU: src-tauri/rendering.rs) a page
        // where nothing changes never paints again, and the request hangs until
        // the client gives up. A one-pixel dot that cannot be seen (0.1% ink) and flips
        // its opacity every 16 ms keeps a paint coming while the capture runs.
        let _ = self
            .driver
            .execute(
                "const dot = document.createElement('div'); \
                 dot.style.cssText = 'position: fixed; left: 0; top: 0; width: 1px; height: 1px; \
                   background: rgb(0 0 0 / 0.1%); pointer-events: none;'; \
                 document.body.append(dot); \
                 const flip = setInterval(() => { dot.style.opacity = dot.style.opacity === '0.5' ? '1' : '0.5'; }, 16); \
                 window.cairnStopPainting = () => { clearInterval(flip); dot.remove(); };",
                Vec::new(),
            )
            .await;
        if let Err(err) = self.driver.screenshot(&path).await {
            eprintln!("no screenshot {name}: {err}");
        }
        let _ = self
            .driver
            .execute("window.cairnStopPainting?.();", Vec::new())
            .await;
        eprintln!("screenshot: {}", path.display());
        path
    }
}

/// An element's rendered text. (WebKitWebDriver's own "element text" comes back
/// empty for text inside a <button>.)
pub async fn text_of(element: &WebElement) -> String {
    element
        .prop("innerText")
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// A WebDriver session with the app.
async fn new_session(port: u16, caps: Capabilities) -> WebDriver {
    WebDriver::new(format!("http://127.0.0.1:{port}"), caps)
        .await
        .unwrap_or_else(|err| panic!("a WebDriver session with the app: {err:?}"))
}

async fn wait_for_port(port: u16, who: &str) {
    let start = Instant::now();
    while start.elapsed() < PATIENCE {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{who} did not listen on {port} within {PATIENCE:?}");
}

/// What `path` holds (nothing if it is absent), removing it.
fn take_file(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let _ = std::fs::remove_file(path);
    text
}

/// The shader spy (`tests/e2e/sksl_spy.c`), built once per test run with the C
/// compiler Rust's linker already needs.
fn shader_spy() -> &'static Path {
    static SPY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SPY.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/sksl_spy.c");
        let built = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sksl-spy.so");
        let status = Command::new("cc")
            .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o"])
            .arg(&built)
            .arg(&source)
            .arg("-ldl")
            .status()
            .expect("a C compiler (cc) for the shader spy");
        assert!(status.success(), "the shader spy builds: {status}");
        built
    })
}

/// An app left from a test that failed (it hides to the tray rather than close)
/// would answer the next launch as the single instance.
fn kill_strays() {
    let app = app_exe();
    let start = Instant::now();
    loop {
        let strays = processes_running(&app);
        if strays.is_empty() {
            return wait_for_single_instance_name_release(start);
        }
        // Gone means gone from the bus too: until then its single-instance name would
        // still answer, and the next launch would hand itself over to a dying app.
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "stray apps {strays:?} survived kill -9"
        );
        for pid in strays {
            let _ = Command::new("kill").args(["-9", &pid]).status();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The bus name the first instance holds (the app's identifier + suffix).
const SINGLE_INSTANCE_NAME: &str = "dev.cairn.desktop.SingleInstance";

/// A killed app's bus name goes when the bus daemon notices, which a busy machine can
/// delay past the next launch; that launch would then hand itself to the dead app.
fn wait_for_single_instance_name_release(start: Instant) {
    while start.elapsed() < Duration::from_secs(10) {
        let owned = Command::new("dbus-send")
            .args([
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                &format!("string:{SINGLE_INSTANCE_NAME}"),
            ])
            .output()
            .expect("dbus-send runs (apt install dbus)");
        if !String::from_utf8_lossy(&owned.stdout).contains("boolean true") {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{SINGLE_INSTANCE_NAME} is still owned after its app was killed");
}

/// The ids of the live processes running `exe` (a zombie's exe link is unreadable).
pub fn processes_running(exe: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read_link(entry.path().join("exe")).is_ok_and(|target| target == exe)
        })
        .filter_map(|entry| entry.file_name().to_str().map(str::to_owned))
        .collect()
}
