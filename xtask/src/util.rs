//! What every command and suite of the task runner uses, and which uses
//! none of them (a leaf, as wgpu's `xtask/src/util.rs`): the result type,
//! the workspace's paths, commands run (shown, or logged as they run, or
//! several at once), `cargo test`'s output read, rustup's lists, Debian's
//! packages and lavapipe, and what the steps of a test run are made of.

use std::env;
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;

pub type Result<T = (), E = String> = std::result::Result<T, E>;

/// Runs an install step unless `--no-install` said not to.
pub fn installing(install: bool, step: impl FnOnce() -> Result) -> Result {
    if install { step() } else { Ok(()) }
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub fn target_dir() -> PathBuf {
    env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// Where the tools the task runner installs beside the system's live (the
/// venvs, the aarch64 CPython and its packages): `$BYTELENS_CACHE`, else
/// `$XDG_CACHE_HOME/bytelens`, else `~/.cache/bytelens`. Outside `target/`,
/// so that a fresh clone on a machine that has run the tests before finds
/// them made (each is checked against what it should hold, and made again
/// when it differs), as it finds cargo's registry and Debian's packages.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = env::var_os("BYTELENS_CACHE") {
        return PathBuf::from(dir);
    }
    let base = env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(|| target_dir().join("cache"));
    base.join("bytelens")
}

/// A command run from the workspace root.
pub fn cmd(program: &str, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.args(args).current_dir(root());
    c
}

/// Installs Debian's `packages` (without the ones they only recommend),
/// after refreshing the package lists.
pub fn apt_install(packages: &[&str]) -> Result {
    run(cmd("apt-get", &["-o", "DPkg::Lock::Timeout=900", "update"]))?;
    // Waits for another apt or dpkg (a second task runner, unattended
    // upgrades) rather than failing at once on its lock.
    let mut apt = cmd(
        "apt-get",
        &[
            "-o",
            "DPkg::Lock::Timeout=900",
            "install",
            "-y",
            "--no-install-recommends",
        ],
    );
    apt.args(packages).env("DEBIAN_FRONTEND", "noninteractive");
    run(apt)
}

pub fn run(mut c: Command) -> Result {
    let shown = format!("{c:?}").replace('"', "");
    println!("\n$ {shown}");
    let status = c
        .status()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

fn output(program: &str, args: &[&str]) -> Result<String> {
    let out = cmd(program, args)
        .output()
        .map_err(|e| format!("could not start {program}: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Lines of `rustup <args>` output, first word of each.
pub fn rustup_list(args: &[&str]) -> Result<Vec<String>> {
    Ok(output("rustup", args)?
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect())
}

/// Runs `c`, echoing its output and stderr (cargo's "Running" lines) as
/// they come, in order, then `then` once `c` has exited (whatever its
/// status), and returns the output; a failing status is an error.
///
/// The output is read to its end only after `then`: a process `c` started
/// and left behind holding the pipe (Wine's services, say) would otherwise
/// keep the read waiting, and `then` stops those.
pub fn run_logged(mut c: Command, then: impl FnOnce() -> Result) -> Result<String> {
    let shown = format!("{c:?}").replace('"', "");
    println!("\n$ {shown}");
    let spawned = io::pipe().and_then(|(reader, writer)| {
        c.stderr(writer.try_clone()?).stdout(writer);
        Ok((reader, c.spawn()?))
    });
    // The command holds the pipe's write ends: dropped, the reader sees its
    // end once the child (and whatever it started) is done.
    drop(c);
    let (reader, mut child) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            then()?;
            return Err(format!("could not start {shown}: {e}"));
        }
    };
    let echo = thread::spawn(move || {
        let mut log = String::new();
        let mut reader = BufReader::new(reader);
        let mut line = vec![];
        while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            let text = String::from_utf8_lossy(&line);
            print!("{text}");
            log.push_str(&text);
            line.clear();
        }
        log
    });
    let status = child.wait().map_err(|e| format!("{shown}: {e}"));
    then()?;
    let log = echo.join().map_err(|_| "the output reader panicked")?;
    let status = status?;
    if status.success() {
        Ok(log)
    } else {
        Err(format!("`{shown}` failed ({status})"))
    }
}

/// Runs the commands at once, each one's output into a file under `dir`,
/// printed when all are done; their logs, or the first failure.
pub fn run_logged_together(
    commands: impl IntoIterator<Item = Command>,
    dir: &Path,
) -> Result<Vec<String>> {
    fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut children = vec![];
    for (i, mut c) in commands.into_iter().enumerate() {
        let path = dir.join(format!("together-{i}.log"));
        let file = fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let shown = format!("{c:?}").replace('"', "");
        println!("\n$ {shown} > {}", path.display());
        let err = file.try_clone().map_err(|e| e.to_string())?;
        c.stdout(file).stderr(err);
        let child = c
            .spawn()
            .map_err(|e| format!("could not start {shown}: {e}"));
        children.push((shown, path, child));
    }
    let mut logs = vec![];
    let mut failed = None;
    for (shown, path, child) in children {
        let status = child.and_then(|mut c| c.wait().map_err(|e| format!("{shown}: {e}")));
        let log = fs::read_to_string(&path).unwrap_or_default();
        println!("\n--- {shown}:\n{log}");
        match status {
            Ok(s) if s.success() => logs.push(log),
            Ok(s) => {
                failed.get_or_insert(format!("`{shown}` failed ({s})"));
            }
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    match failed {
        Some(err) => Err(err),
        None => Ok(logs),
    }
}

/// One test binary's part of `cargo test`'s output.
#[derive(Debug, PartialEq)]
pub struct Binary {
    /// As cargo names it: "tests/shared.rs", "unittests src/lib.rs",
    /// "Doc-tests bytelens".
    pub name: String,
    /// From its "test result:" line.
    pub passed: u64,
    /// Its passed tests whose path `tally`'s `marked` picked out.
    pub marked: u64,
    /// The lines of its output that say a case was skipped, and why.
    pub skipped: Vec<String>,
}

/// The binaries `cargo test`'s output says ran, in order, with what
/// passed; `marked` picks out the tests (by path) whose passes are counted
/// apart (the cross suite's `shared::` unit tests, the arm suite's NEON ones).
pub fn tally(log: &str, marked: impl Fn(&str) -> bool) -> Vec<Binary> {
    let mut binaries: Vec<Binary> = vec![];
    for line in log.lines().map(str::trim) {
        let name = if let Some(rest) = line.strip_prefix("Running ") {
            Some(rest.split(" (").next().unwrap_or(rest))
        } else if line.starts_with("Doc-tests ") {
            Some(line)
        } else {
            None
        };
        if let Some(name) = name {
            binaries.push(Binary {
                name: name.to_owned(),
                passed: 0,
                marked: 0,
                skipped: vec![],
            });
        } else if let Some(binary) = binaries.last_mut() {
            if let Some(result) = line.strip_prefix("test result: ") {
                binary.passed = count(result, "passed");
            } else if let Some(test) = line.strip_prefix("test ")
                && let Some(path) = test.strip_suffix(" ... ok")
                && marked(path)
            {
                binary.marked += 1;
            } else if line.starts_with("skipped: ") {
                binary.skipped.push(line.to_owned());
            }
        }
    }
    binaries
}

/// The number before `word` in "ok. 12 passed; 0 failed; ..." (0 if none).
pub fn count(summary: &str, word: &str) -> u64 {
    let words: Vec<&str> = summary.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[1].trim_end_matches([';', ',']) == word)
        .and_then(|w| w[0].parse().ok())
        .unwrap_or(0)
}

/// Debian's packages for a Vulkan driver-less CPU machine: the loader,
/// lavapipe, and vulkaninfo for looking around.
const LAVAPIPE: [&str; 3] = ["mesa-vulkan-drivers", "libvulkan1", "vulkan-tools"];

/// Installs lavapipe and the Vulkan loader unless both are there.
pub fn ensure_lavapipe() -> Result {
    let icd_dir = Path::new("/usr/share/vulkan/icd.d");
    let has_lavapipe = fs::read_dir(icd_dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("lvp_icd"))
    });
    if has_lavapipe && has_loader() {
        return Ok(());
    }
    apt_install(&LAVAPIPE)
}

/// Whether the Vulkan loader (`libvulkan.so.1`) is installed.
pub fn has_loader() -> bool {
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("libvulkan.so.1"))
}

/// Makes a test command require an adapter (a missing one fails, never
/// skips) and quiets Mesa's device-select layer on headless machines.
pub fn require_gpu(c: &mut Command) -> &mut Command {
    c.env("BYTELENS_REQUIRE_GPU", "1")
        .env("NODEVICE_SELECT", "1")
}

/// One named command of a suite.
pub type Step = (String, Command);

/// What the steps of a run may depend on.
pub struct Run {
    /// Where web-demo/ is served.
    pub demo_url: String,
    pub install: bool,
    /// Every test everywhere (`cargo xtask test all`, or `--all` with
    /// suites): nothing sampled.
    pub all: bool,
}

/// This task runner again, as a step of another task, with the same `--no-install`.
pub fn xtask_step(task: &str, run: &Run) -> Command {
    let mut c = cmd("cargo", &["xtask", task]);
    if !run.install {
        c.env("BYTELENS_NO_INSTALL", "1");
    }
    c
}
