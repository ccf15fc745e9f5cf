//! Import circles among the files of a source folder: module A uses B and
//! B uses A, directly or through others. Issue 41 asks for none in
//! `xtask/src`, `wasm/src` and the Python package ([`PY_PACKAGE`]); the
//! tests below hold those folders to it.
//!
//! A file's references are read from its text, not from a compiler:
//!
//! - Rust: every path that starts with `crate::`, `super::`, `self::` or
//!   the name of a module of the folder declared by the file (`mod http;`
//!   and then `http::parse_head`), `use` groups (`crate::{a, b::c}`)
//!   included, with comments, strings and character literals left out, and
//!   `super::` taken from the inline module it is written in (a file's
//!   `mod tests { use super::*; }` uses the file itself). A path names the
//!   file of the longest module path it starts with.
//! - Python: `from .x import y`, `from .. import x`, `from PKG.x import y`
//!   and `import PKG.x`, where PKG is the folder's name; a name imported
//!   from a package that is a module of its own (`from . import _files`)
//!   names that module. Imports inside functions count too.
//!
//! A reference to the file itself is no edge; what is outside the folder
//! is ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::Result;

/// The languages [`circles`] reads.
#[derive(Clone, Copy, Debug)]
pub enum Language {
    Rust,
    Python,
}

/// The import circles among the files under `dir`: each the files (paths
/// relative to `dir`, sorted) of one strongly connected part of the graph
/// of their references, of two files or more.
pub fn circles(dir: &Path, language: Language) -> Result<Vec<Vec<PathBuf>>> {
    let mut files = vec![];
    source_files(dir, dir, language, &mut files)?;
    files.sort();
    // Module path -> the index of its file (a Python module's `.py` before
    // its `.pyi` stub).
    let mut modules: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        let module = module_path(file, language);
        let keep = modules
            .get(&module)
            .is_none_or(|&j| files[j].extension().is_some_and(|e| e == "pyi"));
        if keep {
            modules.insert(module, i);
        }
    }
    // The name the folder's Python modules import their own package by.
    let package_name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let mut edges: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); files.len()];
    let mut references = vec![];
    let mut aliases = Aliases::new();
    for file in &files {
        let text =
            fs::read_to_string(dir.join(file)).map_err(|e| format!("{}: {e}", file.display()))?;
        let module = module_path(file, language);
        let referenced = match language {
            Language::Rust => rust_references(&text, &module, &modules, &mut aliases),
            Language::Python => python_references(&text, &package_name, file, &module, &modules),
        };
        references.push(referenced);
    }
    for (i, referenced) in references.iter().enumerate() {
        for path in referenced {
            if let Some(j) = resolve(path, &modules, &aliases)
                && j != i
            {
                edges[i].insert(j);
            }
        }
    }
    Ok(strongly_connected(&edges)
        .into_iter()
        .filter(|part| part.len() > 1)
        .map(|part| {
            let mut names: Vec<PathBuf> = part.into_iter().map(|i| files[i].clone()).collect();
            names.sort();
            names
        })
        .collect())
}

/// The files of `language` under `dir`, relative to `root`.
fn source_files(root: &Path, dir: &Path, language: Language, out: &mut Vec<PathBuf>) -> Result {
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            source_files(root, &path, language, out)?;
            continue;
        }
        let wanted: &[&str] = match language {
            Language::Rust => &["rs"],
            Language::Python => &["py", "pyi"],
        };
        if path
            .extension()
            .is_some_and(|e| wanted.iter().any(|w| e == *w))
        {
            let relative = path.strip_prefix(root).map_err(|e| e.to_string())?;
            out.push(relative.to_owned());
        }
    }
    Ok(())
}

/// The module a file is, as a path from the folder's root module:
/// `web/serve.rs` is `[web, serve]`, `main.rs`, `lib.rs` and `__init__.py`
/// of the folder are `[]`, `a/mod.rs` and `a/__init__.py` are `[a]`.
fn module_path(file: &Path, language: Language) -> Vec<String> {
    let mut parts: Vec<String> = file
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.last().map(String::as_str);
    let drop = match language {
        Language::Rust => {
            last == Some("mod") || (parts.len() == 1 && matches!(last, Some("main" | "lib")))
        }
        Language::Python => last == Some("__init__"),
    };
    if drop {
        parts.pop();
    }
    parts
}

/// The names a Rust module's `use` declarations bring in (re-exports
/// among them), each with the path it stands for: module path -> name ->
/// path.
type Aliases = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

/// The file of the longest module path that `path` starts with, after the
/// names brought in by `use` (`crate::Error` where lib.rs says `pub use
/// error::Error`) are followed to what they stand for: a re-export is a
/// name, not a use of the file that makes it.
fn resolve(
    path: &[String],
    modules: &BTreeMap<Vec<String>, usize>,
    aliases: &Aliases,
) -> Option<usize> {
    let mut path = path.to_vec();
    // Bounded: names that stand for each other stop somewhere.
    for _ in 0..8 {
        let n = (0..=path.len())
            .rev()
            .find(|&n| modules.contains_key(&path[..n]))?;
        let alias = path
            .get(n)
            .and_then(|name| aliases.get(&path[..n])?.get(name));
        match alias {
            Some(target) if *target != path[..=n] => {
                path = target.iter().chain(&path[n + 1..]).cloned().collect();
            }
            _ => return modules.get(&path[..n]).copied(),
        }
    }
    modules.get(&path[..0]).copied()
}

/// `text` with its comments, string literals and character literals
/// blanked out (each byte a space, line ends kept).
fn rust_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&b[i..]) {
            // r"..", r#".."#, br#".."#: to the quote and as many hashes.
            let close: Vec<u8> = [b'"'].into_iter().chain(vec![b'#'; hashes]).collect();
            i += b[i..].iter().position(|&c| c == b'"').unwrap_or(0) + 1;
            while i < b.len() && !b[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{1F600}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + width) == Some(&b'\'') {
                    i += 2 + width;
                } else {
                    i += 1;
                    continue;
                }
            }
        } else {
            i += 1;
            continue;
        }
        blank(&mut out, start, i);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The number of `#`s of a raw string (byte string) literal starting at
/// the start of `b`, if one does, not in the middle of an identifier.
fn raw_string_start(b: &[u8]) -> Option<usize> {
    let rest = b.strip_prefix(b"br").or_else(|| b.strip_prefix(b"r"))?;
    let hashes = rest.iter().take_while(|&&c| c == b'#').count();
    (rest.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The code's tokens: identifiers, `::`, and every other character but
/// whitespace on its own.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = vec![];
    let mut rest = code;
    while let Some(c) = rest.chars().next() {
        let len = if c.is_alphanumeric() || c == '_' {
            rest.find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len())
        } else if rest.starts_with("::") {
            2
        } else {
            c.len_utf8()
        };
        if !c.is_whitespace() {
            out.push(&rest[..len]);
        }
        rest = &rest[len..];
    }
    out
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The module paths a Rust file at `module` refers to (see the module's docs).
/// The names its `use` declarations at the top of the file bring in go
/// into `aliases`.
fn rust_references(
    text: &str,
    module: &[String],
    modules: &BTreeMap<Vec<String>, usize>,
    aliases: &mut Aliases,
) -> Vec<Vec<String>> {
    let code = rust_code(text);
    let t = tokens(&code);
    // The inline modules the scan is in: each its name and the brace depth
    // its body opened at.
    let mut inline: Vec<(String, usize)> = vec![];
    let mut depth = 0;
    let mut out = vec![];
    let mut i = 0;
    while i < t.len() {
        match t[i] {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if inline.last().is_some_and(|&(_, d)| d == depth) {
                    inline.pop();
                }
            }
            "mod" if t.get(i + 1).is_some_and(|n| is_ident(n)) && t.get(i + 2) == Some(&"{") => {
                inline.push((t[i + 1].to_owned(), depth));
            }
            _ => {}
        }
        let starts_path = is_ident(t[i])
            && t.get(i + 1) == Some(&"::")
            && !(i > 0 && matches!(t[i - 1], "::" | "$"));
        if !starts_path {
            i += 1;
            continue;
        }
        let here: Vec<String> = module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        let mut paths = vec![];
        let next = use_tree(&t, i, vec![], &mut paths);
        let declared = i > 0 && t[i - 1] == "use" && inline.is_empty();
        for path in paths {
            if let Some(absolute) = absolute(&path, &here, modules) {
                if declared && let Some(name) = absolute.last() {
                    let names = aliases.entry(module.to_vec()).or_default();
                    names.insert(name.clone(), absolute.clone());
                }
                out.push(absolute);
            }
        }
        i = next;
    }
    out
}

/// Reads the path or `use` tree starting at `t[i]` into `out`, each path
/// after `prefix`; returns the index after it.
fn use_tree(
    t: &[&str],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match t.get(i) {
            Some(&"{") => {
                i += 1;
                while i < t.len() && t[i] != "}" {
                    i = use_tree(t, i, prefix.clone(), out);
                    // Past `as NAME` to the next item or the group's end.
                    while i < t.len() && t[i] != "," && t[i] != "}" {
                        i += 1;
                    }
                    if t.get(i) == Some(&",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            Some(&"*") => {
                out.push(prefix);
                return i + 1;
            }
            Some(token) if is_ident(token) => {
                prefix.push((*token).to_owned());
                i += 1;
                if t.get(i) == Some(&"::") {
                    i += 1;
                } else {
                    out.push(prefix);
                    return i;
                }
            }
            _ => {
                out.push(prefix);
                return i;
            }
        }
    }
}

/// A path written in the module `here` as a path from the root module:
/// `crate::`, `super::` and `self::` resolved, and a first segment that
/// names a module of the folder under `here` taken as that module. None
/// for a path into another crate, a type or a local name.
fn absolute(
    path: &[String],
    here: &[String],
    modules: &BTreeMap<Vec<String>, usize>,
) -> Option<Vec<String>> {
    let (mut base, rest) = match path.first().map(String::as_str) {
        Some("crate") => (vec![], &path[1..]),
        Some("self") => (here.to_vec(), &path[1..]),
        Some("super") => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let kept = here.len().checked_sub(supers)?;
            (here[..kept].to_vec(), &path[supers..])
        }
        Some(first) => {
            let child: Vec<String> = here.iter().cloned().chain([first.to_owned()]).collect();
            if !modules.contains_key(&child) {
                return None;
            }
            (here.to_vec(), path)
        }
        None => return None,
    };
    base.extend(rest.iter().filter(|s| *s != "self").cloned());
    Some(base)
}

/// The module paths a Python file at `module` imports (see the module's docs).
fn python_references(
    text: &str,
    package_name: &str,
    file: &Path,
    module: &[String],
    modules: &BTreeMap<Vec<String>, usize>,
) -> Vec<Vec<String>> {
    let package: &[String] = if file.file_stem().is_some_and(|s| s == "__init__") {
        module
    } else {
        &module[..module.len().saturating_sub(1)]
    };
    let mut out = vec![];
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("import ") {
            for name in rest.split(',') {
                let name = name.split(" as ").next().unwrap_or("").trim();
                out.extend(own_module(name, package_name));
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("from ") else {
            continue;
        };
        let Some((from, names)) = rest.split_once(" import ") else {
            continue;
        };
        let from = from.trim();
        let dots = from.len() - from.trim_start_matches('.').len();
        let base: Vec<String> = if dots == 0 {
            match own_module(from, package_name) {
                Some(path) => path,
                None => continue,
            }
        } else {
            let Some(kept) = (package.len() + 1).checked_sub(dots) else {
                continue;
            };
            let mut base = package[..kept].to_vec();
            let dotted = &from[dots..];
            if !dotted.is_empty() {
                base.extend(dotted.split('.').map(str::to_owned));
            }
            base
        };
        // The names, over the lines of a parenthesized list.
        let mut names = names.to_owned();
        if names.trim_start().starts_with('(') {
            while !names.contains(')') {
                match lines.next() {
                    Some(next) => names.push_str(next),
                    None => break,
                }
            }
        }
        let names = names.replace(['(', ')'], " ");
        let mut any = false;
        for name in names.split(',') {
            let name = name.split(" as ").next().unwrap_or("").trim();
            let child: Vec<String> = base.iter().cloned().chain([name.to_owned()]).collect();
            if !name.is_empty() && modules.contains_key(&child) {
                out.push(child);
                any = true;
            }
        }
        if !any {
            out.push(base);
        }
    }
    out
}

/// `PKG.a.b` as the module path `[a, b]` where PKG is `package`, the
/// folder's own package; None for another package's module.
fn own_module(dotted: &str, package: &str) -> Option<Vec<String>> {
    let mut parts = dotted.split('.');
    (parts.next() == Some(package)).then(|| parts.map(str::to_owned).collect())
}

/// The strongly connected parts of the graph (Tarjan's algorithm).
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'e> {
        edges: &'e [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        parts: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut part = vec![];
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                part.push(w);
                if w == v {
                    break;
                }
            }
            s.parts.push(part);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: vec![],
        next: 0,
        parts: vec![],
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.parts
}

#[cfg(test)]
mod tests;
