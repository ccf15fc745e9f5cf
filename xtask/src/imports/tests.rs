//! The import-circle finder on the workspace's folders, and on made-up
//! folders with circles and with near misses.

use std::fs;
use std::path::PathBuf;

use super::{Language, circles, rust_code};
use crate::python_env::PY_PACKAGE;
use crate::util::root;

/// Fails naming the circles under `dir`, the workspace's folder.
fn assert_no_circles(dir: &str, language: Language) {
    let found = circles(&root().join(dir), language).unwrap();
    assert!(found.is_empty(), "import circles in {dir}: {found:?}");
}

#[test]
fn xtask_has_no_import_circle() {
    assert_no_circles("xtask/src", Language::Rust);
}

#[test]
fn the_wasm_crate_has_no_import_circle() {
    assert_no_circles("wasm/src", Language::Rust);
}

#[test]
fn the_python_package_has_no_import_circle() {
    assert_no_circles(PY_PACKAGE, Language::Python);
}

/// A folder of `files` (path, text) under the temporary folder, removed
/// when dropped.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str, files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir()
            .join(format!("xtask-imports-{}", std::process::id()))
            .join(name);
        let _ = fs::remove_dir_all(&dir);
        for (path, text) in files {
            let path = dir.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Self(dir)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn found(folder: &Folder, language: Language) -> Vec<Vec<String>> {
    circles(&folder.0, language)
        .unwrap()
        .into_iter()
        .map(|part| {
            part.iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn rust_circles_through_crate_super_groups_and_children_are_found() {
    let folder = Folder::new(
        "rust",
        &[
            ("main.rs", "mod a;\nmod b;\nmod c;\nmod d;\nfn main() {}\n"),
            // a -> b -> c -> a, through a group, a glob and a child.
            ("a.rs", "use crate::{b::{self, x as y}};\n"),
            ("b.rs", "pub fn x() { crate::c::z(); }\n"),
            ("c.rs", "mod inner;\npub fn z() { inner::w() }\n"),
            ("c/inner.rs", "use super::super::a::*;\npub fn w() {}\n"),
            // d uses c, and nothing comes back.
            ("d.rs", "fn f() { c(); }\nfn c() { crate::c::z() }\n"),
        ],
    );
    assert_eq!(
        found(&folder, Language::Rust),
        [["a.rs", "b.rs", "c/inner.rs", "c.rs"]]
    );
}

#[test]
fn rust_comments_strings_and_a_files_own_tests_are_no_edges() {
    let folder = Folder::new(
        "rust-none",
        &[
            ("main.rs", "mod a;\nmod b;\nfn main() { a::f(); }\n"),
            (
                "a.rs",
                "pub fn f() { let _ = ('{', \"crate::b::{\", r#\"super::b\"#); }\n\
                 // crate::b::g()\n/* crate::b /* nested */ crate::b */\n\
                 #[cfg(test)]\nmod tests {\n    use super::*;\n    fn t<'a>(_: &'a str) {}\n}\n",
            ),
            ("b.rs", "pub fn g() { crate::a::f() }\n"),
        ],
    );
    // b -> a only (a's mentions of b are in a comment or a string; its
    // tests' `super` is a itself); a -> main is no edge back into b.
    assert!(found(&folder, Language::Rust).is_empty());
    let folder = Folder::new(
        "rust-back",
        &[
            ("main.rs", "mod a;\nmod b;\nfn main() {}\n"),
            ("a.rs", "mod tests {\n    use crate::b::g;\n}\n"),
            ("b.rs", "pub fn g() { crate::a::f() }\n"),
        ],
    );
    assert_eq!(found(&folder, Language::Rust), [["a.rs", "b.rs"]]);
}

#[test]
fn python_relative_and_absolute_circles_are_found() {
    let folder = Folder::new(
        "pkg",
        &[
            ("__init__.py", "from ._a import x\n"),
            ("_a.py", "from . import _b, _stub\n"),
            ("_b.py", "def f():\n    from pkg._sub.m import y\n"),
            ("_stub.pyi", "def x() -> int: ...\n"),
            ("_sub/__init__.py", ""),
            ("_sub/m.py", "from .._a import (\n    x,\n)\n"),
            ("_c.py", "import pkg._a\nfrom ._a import x\n"),
        ],
    );
    assert_eq!(
        found(&folder, Language::Python),
        [["_a.py", "_b.py", "_sub/m.py"]]
    );
}

#[test]
fn the_code_keeps_its_paths_and_loses_its_strings() {
    let text = "a::b(\"c::d\", 'e', '\\'', b'{'); // f::g\nh::i";
    let code = rust_code(text);
    assert!(code.contains("a::b("), "{code}");
    assert!(code.contains("h::i"), "{code}");
    assert!(!code.contains("c::d") && !code.contains("f::g"), "{code}");
    assert!(!code.contains('{'), "{code}");
    assert_eq!(code.len(), text.len());
}
