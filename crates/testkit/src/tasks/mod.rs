//! Everyday tasks a user gives a small local model, for the task benchmark and the
//! real-model tests: read and answer, find, write, edit, count, a two-step job, a
//! command, and a question in a chat without a folder. Each run gets a fresh folder and fresh words from its seed (file names,
//! contents, the answer, the wording of the request), so that nothing a model or a
//! harness remembers from one run answers the next. Only the judge knows the answer:
//! it reads the final answer and the folder afterwards, never the prompt sent.

use std::fmt;
use std::path::Path;
use std::process::Command;

mod run;

pub use run::{Model, Outcome, run};

/// One kind of everyday task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Task {
    /// Read a file and say the code word in it.
    Read,
    /// Say which of three files mentions an animal.
    Find,
    /// Write a small Python script that prints a line.
    Write,
    /// Change a word in a file, or tick a box in a to-do list.
    Edit,
    /// Count a CSV file's data rows.
    Count,
    /// Copy the code word from one file into a new one.
    TwoStep,
    /// Run a script and report what it printed.
    Command,
    /// Ask what any model knows, in a chat without a folder.
    Chat,
}

impl Task {
    pub const ALL: [Self; 8] = [
        Self::Read,
        Self::Find,
        Self::Write,
        Self::Edit,
        Self::Count,
        Self::TwoStep,
        Self::Command,
        Self::Chat,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Find => "find",
            Self::Write => "write",
            Self::Edit => "edit",
            Self::Count => "count",
            Self::TwoStep => "two-step",
            Self::Command => "command",
            Self::Chat => "chat",
        }
    }

    /// Whether the task is asked in a chat with a folder (`--workspace`): all but
    /// [`Task::Chat`].
    pub fn in_folder(self) -> bool {
        self != Self::Chat
    }

    /// The task's files written into `dir`, and the request a user would type, worded
    /// by `seed` (the same seed gives the same run).
    ///
    /// # Errors
    /// When a file cannot be written into `dir`.
    pub fn prepare(self, seed: u64, dir: &Path) -> std::io::Result<Prepared> {
        let mut words = Words::new(seed ^ (self as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (files, prompt, expect) = match self {
            Self::Read => read(&mut words),
            Self::Find => find(&mut words),
            Self::Write => write(&mut words),
            Self::Edit => edit(&mut words),
            Self::Count => count(&mut words),
            Self::TwoStep => two_step(&mut words),
            Self::Command => command(&mut words),
            Self::Chat => chat(&mut words),
        };
        for (name, content) in &files {
            std::fs::write(dir.join(name), content)?;
        }
        Ok(Prepared {
            task: self,
            prompt,
            expect,
            files,
        })
    }
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A task set up in its folder: what to ask, and how its outcome is judged.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub task: Task,
    /// The user's request.
    pub prompt: String,
    expect: Expect,
    /// The files it was given, by name, as written.
    files: Vec<(String, String)>,
}

/// What a finished run must show.
#[derive(Debug, Clone)]
enum Expect {
    /// The answer says this (any case).
    Says(String),
    /// The answer names this file (with its extension) first among `among`.
    NamesFirst { file: String, among: Vec<String> },
    /// The answer says this number, in digits or words.
    Number(u32),
    /// `python3 FILE` run in the folder prints this.
    Prints { file: String, text: String },
    /// The file holds exactly this (a final newline aside).
    Holds { file: String, content: String },
    /// The file exists and contains this.
    Contains { file: String, text: String },
}

/// Why a run did not do its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss(pub String);

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Prepared {
    /// Whether the run whose final answer is `answer` did the task, judged from that
    /// answer and from `dir` as the run left it.
    ///
    /// # Errors
    /// What was missing.
    pub fn judge(&self, answer: &str, dir: &Path) -> Result<(), Miss> {
        let lower = answer.to_lowercase();
        if self.expect.is_a_question() {
            self.left_alone(dir)?;
        }
        match &self.expect {
            Expect::Says(text) => lower
                .contains(&text.to_lowercase())
                .then_some(())
                .ok_or_else(|| Miss(format!("the answer does not say {text}"))),
            Expect::NamesFirst { file, among } => {
                // A listing of the folder names the file too, first when its name
                // sorts first: naming them all answers nothing.
                if among
                    .iter()
                    .all(|name| lower.contains(&name.to_lowercase()))
                {
                    return Err(Miss("the answer names every file".to_owned()));
                }
                let first = among
                    .iter()
                    .filter_map(|name| lower.find(&name.to_lowercase()).map(|at| (at, name)))
                    .min()
                    .map(|(_, name)| name);
                match first {
                    Some(name) if name == file => Ok(()),
                    Some(name) => Err(Miss(format!("the answer names {name}, not {file}"))),
                    None => Err(Miss(format!("the answer names no file; it is {file}"))),
                }
            }
            Expect::Number(n) => says_number(&lower, *n)
                .then_some(())
                .ok_or_else(|| Miss(format!("the answer does not say {n}"))),
            Expect::Prints { file, text } => {
                let path = dir.join(file);
                if !path.is_file() {
                    return Err(Miss(format!("{file} was not written")));
                }
                let out = Command::new("python3")
                    .arg(file)
                    .current_dir(dir)
                    .output()
                    .map_err(|err| Miss(format!("python3 did not start: {err}")))?;
                let printed = String::from_utf8_lossy(&out.stdout);
                printed
                    .contains(text.as_str())
                    .then_some(())
                    .ok_or_else(|| Miss(format!("{file} prints {printed:?}, not {text:?}")))
            }
            Expect::Holds { file, content } => {
                let held = std::fs::read_to_string(dir.join(file))
                    .map_err(|err| Miss(format!("{file}: {err}")))?;
                // A box ticked with a capital X is ticked.
                (held.replace("[X]", "[x]").trim_end() == content.trim_end())
                    .then_some(())
                    .ok_or_else(|| Miss(format!("{file} holds {held:?}, not {content:?}")))
            }
            Expect::Contains { file, text } => {
                let held = std::fs::read_to_string(dir.join(file))
                    .map_err(|_| Miss(format!("{file} was not written")))?;
                held.contains(text.as_str())
                    .then_some(())
                    .ok_or_else(|| Miss(format!("{file} holds {held:?}, without {text:?}")))
            }
        }
    }
}

impl Prepared {
    /// A question changes nothing: every file as it was given, and no other.
    fn left_alone(&self, dir: &Path) -> Result<(), Miss> {
        for (name, content) in &self.files {
            let held = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            if &held != content {
                return Err(Miss(format!("{name} was changed, for a question")));
            }
        }
        let entries = std::fs::read_dir(dir).map_err(|err| Miss(format!("{err}")))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !self.files.iter().any(|(given, _)| *given == name) {
                return Err(Miss(format!("{name} was written, for a question")));
            }
        }
        Ok(())
    }
}

impl Expect {
    fn is_a_question(&self) -> bool {
        matches!(
            self,
            Self::Says(_) | Self::NamesFirst { .. } | Self::Number(_)
        )
    }
}

/// Whether `text` says `n` as a number of its own (not inside a larger one), in
/// digits or in words.
fn says_number(text: &str, n: u32) -> bool {
    let digits = n.to_string();
    let standalone = text.match_indices(&digits).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + digits.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    });
    standalone
        || NUMBER_WORDS
            .get(n as usize)
            .is_some_and(|word| text.split(|c: char| !c.is_alphabetic()).any(|w| w == *word))
}

const NUMBER_WORDS: [&str; 21] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

type Files = Vec<(String, String)>;
type Setup = (Files, String, Expect);

fn read(words: &mut Words) -> Setup {
    let file = format!("{}.txt", words.pick(&DOCUMENTS));
    let code = words.pick(&CODE_WORDS).to_owned();
    let mut lines = words.filler(3);
    let at = words.below(lines.len() + 1);
    lines.insert(at, format!("The code word is {code}."));
    let prompt = match words.below(3) {
        0 => format!("What is the code word in {file}?"),
        1 => format!("{file} has a code word in it. What is it?"),
        _ => format!("Tell me the code word written in {file}."),
    };
    (
        vec![(file, lines.join("\n") + "\n")],
        prompt,
        Expect::Says(code),
    )
}

fn find(words: &mut Words) -> Setup {
    let names = words.distinct(&DOCUMENTS, 3);
    let files: Vec<String> = names.iter().map(|name| format!("{name}.txt")).collect();
    let with_animal = words.below(3);
    let animal = words.pick(&ANIMALS);
    let topics = words.distinct(&NOT_ANIMALS, 3);
    let contents = files
        .iter()
        .zip(&topics)
        .enumerate()
        .map(|(n, (file, topic))| {
            let line = if n == with_animal {
                format!("Yesterday a {animal} walked past the window.")
            } else {
                format!("Yesterday the {topic} was put back by the window.")
            };
            (file.clone(), format!("{line}\nNothing else happened.\n"))
        })
        .collect();
    let prompt = match words.below(3) {
        0 => "Which of the files in this folder mentions an animal?".to_owned(),
        1 => "One of the text files here talks about an animal. Which file is it?".to_owned(),
        _ => "Find the file that mentions an animal and tell me its name.".to_owned(),
    };
    (
        contents,
        prompt,
        Expect::NamesFirst {
            file: files[with_animal].clone(),
            among: files,
        },
    )
}

fn write(words: &mut Words) -> Setup {
    let file = format!("{}.py", words.pick(&SCRIPTS));
    let text = format!("Hello, {}!", words.pick(&NAMES));
    let prompt = match words.below(3) {
        0 => format!("Create a file named {file} that prints \"{text}\"."),
        1 => format!("Write a Python script {file} that prints {text}"),
        _ => format!("I need a script called {file}: when I run it, it should print {text}"),
    };
    (Vec::new(), prompt, Expect::Prints { file, text })
}

fn edit(words: &mut Words) -> Setup {
    if words.below(3) == 0 {
        let items = words.distinct(&CHORES, 3);
        let done = words.below(3);
        let before: Vec<String> = items.iter().map(|item| format!("- [ ] {item}")).collect();
        let mut after = before.clone();
        after[done] = format!("- [x] {}", items[done]);
        return (
            vec![("todo.md".to_owned(), before.join("\n") + "\n")],
            format!("Tick the box for \"{}\" in todo.md.", items[done]),
            Expect::Holds {
                file: "todo.md".to_owned(),
                content: after.join("\n"),
            },
        );
    }
    let file = format!("{}.md", words.pick(&DOCUMENTS));
    let pair = words.distinct(&COLOURS, 2);
    let (old, new) = (pair[0], pair[1]);
    let topic = words.pick(&NOT_ANIMALS);
    let before = format!("# Notes\n\nThe {topic} is painted {old}.\nIt was cheap.\n");
    let after = before.replace(old, new);
    let prompt = match words.below(2) {
        0 => format!("In {file}, change the word {old} to {new}."),
        _ => format!("Replace {old} with {new} in {file}."),
    };
    (
        vec![(file.clone(), before)],
        prompt,
        Expect::Holds {
            file,
            content: after,
        },
    )
}

fn count(words: &mut Words) -> Setup {
    let file = format!("{}.csv", words.pick(&TABLES));
    let rows = 4 + words.below(9);
    let mut csv = String::from("name,age,city\n");
    for _ in 0..rows {
        let age = 20 + words.below(50);
        csv.push_str(&format!(
            "{},{age},{}\n",
            words.pick(&NAMES),
            words.pick(&CITIES)
        ));
    }
    let prompt = match words.below(2) {
        0 => format!("How many data rows are in {file}, not counting the header?"),
        _ => format!("Count the rows of data in {file} (the header line is not a row)."),
    };
    (
        vec![(file, csv)],
        prompt,
        Expect::Number(u32::try_from(rows).unwrap_or(u32::MAX)),
    )
}

fn two_step(words: &mut Words) -> Setup {
    let names = words.distinct(&DOCUMENTS, 2);
    let (from, to) = (format!("{}.txt", names[0]), format!("{}.txt", names[1]));
    let code = words.pick(&CODE_WORDS).to_owned();
    let mut lines = words.filler(2);
    lines.push(format!("The code word is {code}."));
    let prompt = match words.below(2) {
        0 => format!("Put the code word from {from} into a new file called {to}."),
        _ => format!("Read {from} and write the code word it gives into {to}."),
    };
    (
        vec![(from, lines.join("\n") + "\n")],
        prompt,
        Expect::Contains {
            file: to,
            text: code,
        },
    )
}

fn command(words: &mut Words) -> Setup {
    let file = format!("{}.py", words.pick(&SCRIPTS));
    let seed = words.pick(&CODE_WORDS);
    // A sum no one works out in their head: the script has to be run.
    let value: u32 = seed.bytes().map(u32::from).sum::<u32>() * 7 + 13;
    let script = format!("word = \"{seed}\"\nprint(\"checksum:\", sum(map(ord, word)) * 7 + 13)\n");
    let prompt = match words.below(2) {
        0 => format!("Run {file} with python3 and tell me what it prints."),
        _ => format!("What does {file} print when you run it?"),
    };
    (
        vec![(file, script)],
        prompt,
        Expect::Says(value.to_string()),
    )
}

fn chat(words: &mut Words) -> Setup {
    let (country, capital) = CAPITALS[words.below(CAPITALS.len())];
    let prompt = match words.below(3) {
        0 => format!("What is the capital of {country}?"),
        1 => format!("Which city is the capital of {country}?"),
        _ => format!("Name the capital city of {country}."),
    };
    (Vec::new(), prompt, Expect::Says(capital.to_owned()))
}

/// Capitals every model has read of, none of them a word of another's name.
const CAPITALS: [(&str, &str); 12] = [
    ("France", "Paris"),
    ("Japan", "Tokyo"),
    ("Italy", "Rome"),
    ("Spain", "Madrid"),
    ("Germany", "Berlin"),
    ("Egypt", "Cairo"),
    ("Russia", "Moscow"),
    ("Greece", "Athens"),
    ("Portugal", "Lisbon"),
    ("Norway", "Oslo"),
    ("Kenya", "Nairobi"),
    ("Peru", "Lima"),
];

/// Fresh words from a seed: splitmix64, so that a run is the same on every machine.
struct Words(u64);

impl Words {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }

    fn pick<'a>(&mut self, list: &[&'a str]) -> &'a str {
        list[self.below(list.len())]
    }

    /// `n` different words of `list`.
    fn distinct<'a>(&mut self, list: &[&'a str], n: usize) -> Vec<&'a str> {
        let mut left = list.to_vec();
        (0..n)
            .map(|_| left.remove(self.below(left.len())))
            .collect()
    }

    fn filler(&mut self, n: usize) -> Vec<String> {
        self.distinct(&FILLER, n)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}

const DOCUMENTS: [&str; 12] = [
    "notes", "memo", "message", "letter", "reminder", "journal", "draft", "summary", "minutes",
    "diary", "plan", "record",
];
const SCRIPTS: [&str; 8] = [
    "hello", "greet", "welcome", "banner", "say_hi", "intro", "salute", "hi",
];
const TABLES: [&str; 6] = ["data", "people", "members", "guests", "staff", "visitors"];
const CODE_WORDS: [&str; 16] = [
    "PELICAN", "MARBLE", "JUNIPER", "COBALT", "SAFFRON", "TUNDRA", "QUARTZ", "MAGNOLIA", "LANTERN",
    "ORCHID", "GRANITE", "HARBOR", "VELVET", "CINDER", "MEADOW", "SPARROW",
];
const ANIMALS: [&str; 10] = [
    "fox", "giraffe", "badger", "horse", "rabbit", "goat", "tortoise", "deer", "squirrel", "donkey",
];
const NOT_ANIMALS: [&str; 10] = [
    "ladder", "teapot", "bicycle", "umbrella", "lamp", "kettle", "chair", "piano", "blanket",
    "suitcase",
];
const COLOURS: [&str; 8] = [
    "blue", "green", "yellow", "orange", "purple", "grey", "white", "brown",
];
const CHORES: [&str; 8] = [
    "buy milk",
    "call the plumber",
    "water the plants",
    "pay the rent",
    "fix the gate",
    "return the books",
    "book the dentist",
    "clean the oven",
];
const NAMES: [&str; 10] = [
    "Ada", "Bruno", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonas",
];
const CITIES: [&str; 8] = [
    "Lyon", "Porto", "Graz", "Turku", "Ghent", "Bergen", "Cork", "Brno",
];
const FILLER: [&str; 8] = [
    "Remember to bring the umbrella on Tuesday.",
    "The meeting moved to the small room upstairs.",
    "Lunch was soup and bread again.",
    "The printer on the second floor is fixed.",
    "Someone left a scarf in the kitchen.",
    "The train was ten minutes late this morning.",
    "Next week the office closes early on Friday.",
    "The plants by the window need water.",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(task: Task, seed: u64) -> (tempfile::TempDir, Prepared) {
        let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
        let prepared = task
            .prepare(seed, dir.path())
            .unwrap_or_else(|err| panic!("{err}"));
        (dir, prepared)
    }

    #[test]
    fn a_seed_gives_the_same_run_and_another_seed_other_words() {
        for task in Task::ALL {
            let (_a, one) = prepared(task, 1);
            let (_b, again) = prepared(task, 1);
            assert_eq!(one.prompt, again.prompt, "{task}");
            let differ = (2..6).any(|seed| prepared(task, seed).1.prompt != one.prompt);
            assert!(differ, "{task}: the prompt never changes");
        }
    }

    #[test]
    fn the_prompt_never_gives_the_answer_away() {
        for task in [Task::Read, Task::TwoStep, Task::Command, Task::Count] {
            for seed in 0..20 {
                let (_dir, run) = prepared(task, seed);
                let answer = match &run.expect {
                    Expect::Says(text) | Expect::Contains { text, .. } => text.clone(),
                    Expect::Number(n) => n.to_string(),
                    other => panic!("{other:?}"),
                };
                assert!(
                    !run.prompt.contains(&answer),
                    "{task} {seed}: {}",
                    run.prompt
                );
            }
        }
    }

    #[test]
    fn the_judge_reads_the_answer() {
        let (dir, run) = prepared(Task::Read, 3);
        let Expect::Says(code) = &run.expect else {
            panic!("{:?}", run.expect)
        };
        assert!(
            run.judge(&format!("It is {}.", code.to_lowercase()), dir.path())
                .is_ok()
        );
        assert!(
            run.judge("I changed the function call.", dir.path())
                .is_err()
        );
        // The right word is not enough where the file it was read from was overwritten
        // with it, as the 0.5B did.
        let (name, _) = &run.files[0];
        std::fs::write(dir.path().join(name), code).unwrap();
        assert_eq!(
            run.judge(code, dir.path()),
            Err(Miss(format!("{name} was changed, for a question")))
        );
    }

    #[test]
    fn the_find_judge_takes_the_first_file_named() {
        let (dir, run) = prepared(Task::Find, 4);
        let Expect::NamesFirst { file, among } = &run.expect else {
            panic!("{:?}", run.expect)
        };
        let other = among
            .iter()
            .find(|name| *name != file)
            .cloned()
            .unwrap_or_default();
        let right = format!("`{file}` mentions it; {other} does not.");
        assert!(run.judge(&right, dir.path()).is_ok(), "{right}");
        let wrong = format!("{other} mentions an animal, not {file}.");
        assert!(run.judge(&wrong, dir.path()).is_err(), "{wrong}");
        let mut sorted = among.clone();
        sorted.sort();
        let listing = format!("The folder holds: {}.", sorted.join(", "));
        assert_eq!(
            run.judge(&listing, dir.path()),
            Err(Miss("the answer names every file".to_owned()))
        );
    }

    #[test]
    fn numbers_count_alone_in_digits_or_words() {
        assert!(says_number("there are 7 rows", 7));
        assert!(says_number("seven rows", 7));
        assert!(!says_number("17 rows", 7));
        assert!(!says_number("row 70", 7));
        assert!(!says_number("sevenfold", 7));
    }

    #[test]
    fn the_edit_judge_wants_the_whole_file_as_asked() {
        for seed in 0..12 {
            let (dir, run) = prepared(Task::Edit, seed);
            let Expect::Holds { file, content } = &run.expect else {
                panic!("{:?}", run.expect)
            };
            assert!(run.judge("done", dir.path()).is_err(), "unchanged passes");
            std::fs::write(dir.path().join(file), content).unwrap_or_else(|err| panic!("{err}"));
            assert!(run.judge("done", dir.path()).is_ok(), "{seed}");
        }
    }

    #[test]
    fn the_chat_task_is_asked_without_a_folder_and_judged_by_its_answer() {
        let (dir, run) = prepared(Task::Chat, 2);
        assert!(!Task::Chat.in_folder() && Task::Read.in_folder());
        assert!(run.files.is_empty(), "{:?}", run.files);
        let Expect::Says(capital) = &run.expect else {
            panic!("{:?}", run.expect)
        };
        let (country, _) = CAPITALS.iter().find(|(_, c)| c == capital).unwrap();
        assert!(run.prompt.contains(country), "{}", run.prompt);
        assert!(
            run.judge(&format!("The capital is {capital}."), dir.path())
                .is_ok()
        );
        assert!(run.judge("I cannot know that.", dir.path()).is_err());
    }

    #[test]
    fn the_command_task_needs_its_script_run() {
        let (dir, run) = prepared(Task::Command, 5);
        let Expect::Says(value) = &run.expect else {
            panic!("{:?}", run.expect)
        };
        let file = run
            .prompt
            .split_whitespace()
            .find(|word| word.ends_with(".py"))
            .unwrap_or_default();
        let out = Command::new("python3")
            .arg(file)
            .current_dir(dir.path())
            .output()
            .unwrap_or_else(|err| panic!("{err}"));
        let printed = String::from_utf8_lossy(&out.stdout);
        assert_eq!(printed.trim(), format!("checksum: {value}"));
    }
}
