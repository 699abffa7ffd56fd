//! Real processes in the sandbox: what they may write, where they may connect, and
//! what their children inherit. Each case runs `sh -c` with a workspace of its own and
//! a neighbour folder it must not touch (not the temp folder: both live there, so the
//! policy here leaves it out).

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use cairn_sandbox::{Policy, confine, support};

struct Case {
    workspace: tempfile::TempDir,
    neighbour: tempfile::TempDir,
}

struct Ran {
    ok: bool,
    stderr: String,
}

impl Case {
    fn new() -> Self {
        assert!(
            support().is_available(),
            "these tests need Landlock: {}",
            support().said()
        );
        let case = Self {
            workspace: tempfile::tempdir().unwrap(),
            neighbour: tempfile::tempdir().unwrap(),
        };
        std::fs::write(case.inside("kept.txt"), "kept\n").unwrap();
        std::fs::write(case.outside("theirs.txt"), "theirs\n").unwrap();
        case
    }

    fn inside(&self, name: &str) -> PathBuf {
        self.workspace.path().join(name)
    }

    fn outside(&self, name: &str) -> PathBuf {
        self.neighbour.path().join(name)
    }

    /// `script` run by `sh` in the workspace, `$OUT` naming the neighbour folder.
    async fn run(&self, script: &str, network: bool) -> Ran {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(script)
            .current_dir(self.workspace.path())
            .env("OUT", self.neighbour.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let policy = Policy {
            writable: vec![self.workspace.path().to_owned()],
            network,
        };
        confine(&mut command, &policy).unwrap();
        let out = command.output().await.unwrap();
        Ran {
            ok: out.status.success(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn neighbour_untouched(&self) {
        let mut names: Vec<String> = std::fs::read_dir(self.neighbour.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["theirs.txt"], "nothing new beside it");
        assert_eq!(read(&self.outside("theirs.txt")), "theirs\n");
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test]
async fn a_command_writes_inside_its_workspace_and_its_children_too() {
    let case = Case::new();
    let ran = case
        .run(
            "echo made > made.txt && mkdir -p deep/er && sh -c 'echo deeper > deep/er/f.txt' \
             && sed -i s/kept/changed/ kept.txt && rm made.txt && mkdir -p .git && echo ref > .git/HEAD",
            false,
        )
        .await;
    assert!(ran.ok, "{}", ran.stderr);
    assert_eq!(read(&case.inside("deep/er/f.txt")), "deeper\n");
    assert_eq!(read(&case.inside("kept.txt")), "changed\n");
    assert_eq!(read(&case.inside(".git/HEAD")), "ref\n", "commits are work");
    assert!(!case.inside("made.txt").exists());
}

#[tokio::test]
async fn writing_outside_is_refused_however_it_is_tried() {
    let case = Case::new();
    let tries = [
        "echo x > \"$OUT/plain.txt\"",
        "mkdir \"$OUT/folder\"",
        "echo x >> \"$OUT/theirs.txt\"",
        "rm \"$OUT/theirs.txt\"",
        "cp kept.txt \"$OUT/copied.txt\"",
        "mv kept.txt \"$OUT/moved.txt\"",
        "mv \"$OUT/theirs.txt\" here.txt",
        "ln \"$OUT/theirs.txt\" hard.txt && echo x >> hard.txt",
        "ln -s \"$OUT\" link && echo x > link/through.txt",
        "sh -c 'sh -c \"echo x > \\\"$OUT/grandchild.txt\\\"\"'",
    ];
    for script in tries {
        let ran = case.run(script, false).await;
        assert!(!ran.ok, "`{script}` was let through");
        case.neighbour_untouched();
        assert_eq!(read(&case.inside("kept.txt")), "kept\n", "after `{script}`");
    }
}

#[tokio::test]
async fn a_symlink_in_the_workspace_leads_nowhere_writable() {
    let case = Case::new();
    std::os::unix::fs::symlink(case.neighbour.path(), case.inside("elsewhere")).unwrap();
    let ran = case.run("echo x > elsewhere/new.txt", false).await;
    assert!(!ran.ok);
    assert!(ran.stderr.contains("Permission denied"), "{}", ran.stderr);
    case.neighbour_untouched();
    let read_through = case.run("cat elsewhere/theirs.txt", false).await;
    assert!(
        read_through.ok,
        "reading stays as the user can: {}",
        read_through.stderr
    );
}

#[tokio::test]
async fn the_home_folder_is_not_writable() {
    let case = Case::new();
    let home = std::env::var("HOME").unwrap();
    let name = format!("cairn-sandbox-test-{}", std::process::id());
    let target = Path::new(&home).join(&name);
    let ran = case
        .run(
            &format!("mkdir \"$HOME/{name}\" || echo x > \"$HOME/{name}\""),
            false,
        )
        .await;
    assert!(!ran.ok);
    assert!(!target.exists(), "{} was made", target.display());
}

fn python(code: &str) -> String {
    format!("python3 -c \"{code}\"")
}

#[tokio::test]
async fn no_network_unless_allowed() {
    let case = Case::new();
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    let v6 = TcpListener::bind("[::1]:0").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let connect = |host: &str, port: u16| {
        python(&format!(
            "import socket; socket.create_connection(('{host}', {port}), timeout=5)"
        ))
    };
    let tries = [
        connect("127.0.0.1", v4.local_addr().unwrap().port()),
        connect("::1", v6.local_addr().unwrap().port()),
        python("import socket; socket.socket().bind(('127.0.0.1', 0))"),
        python(&format!(
            "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {}))",
            udp.local_addr().unwrap().port()
        )),
        // A grandchild, from a script the workspace holds.
        "sh -c 'sh -c \"python3 connect.py\"'".to_owned(),
    ];
    std::fs::write(
        case.inside("connect.py"),
        format!(
            "import socket\nsocket.create_connection(('127.0.0.1', {}), timeout=5)\n",
            v4.local_addr().unwrap().port()
        ),
    )
    .unwrap();
    for script in &tries {
        let ran = case.run(script, false).await;
        assert!(!ran.ok, "`{script}` reached the network");
        assert!(
            ran.stderr.contains("Permission denied"),
            "`{script}`: {}",
            ran.stderr
        );
    }
    udp.set_nonblocking(true).unwrap();
    assert!(udp.recv(&mut [0; 8]).is_err(), "nothing arrived by UDP");

    for script in &tries[..2] {
        let ran = case.run(script, true).await;
        assert!(
            ran.ok,
            "with the network allowed, `{script}`: {}",
            ran.stderr
        );
    }
}
