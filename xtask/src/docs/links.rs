//! The docs' link check: every internal link and anchor of the built site
//! (the guide and the API references under `target/docs/`) and of the
//! README must name a file, and an element, that is there.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::util::{Result, root};

/// What [`check_links`] looked at.
pub struct Checked {
    pub pages: usize,
    pub links: usize,
}

/// Every `href` and `src` of every page under `site` that stays inside the
/// site must name a file that is there and, with a fragment, an `id` (or
/// `name`) in it; the README's relative links must name files of the
/// repository, and its links into `docs/guide/` anchors of the built
/// chapters. Fails naming each broken link (the first 30).
pub fn check_links(site: &Path) -> Result<Checked> {
    let mut pages = vec![];
    html_files(site, &mut pages)?;
    let mut ids = Anchors::default();
    let mut broken = vec![];
    let mut links = 0;
    for page in &pages {
        let text = fs::read_to_string(page).map_err(|e| format!("{}: {e}", page.display()))?;
        for link in attributes(&text, &["href", "src"]) {
            let Some((path, fragment)) = internal(&link) else {
                continue;
            };
            links += 1;
            let target = if path.is_empty() {
                page.clone()
            } else {
                let base = if path.starts_with('/') {
                    site
                } else {
                    page.parent().unwrap_or(site)
                };
                let target = normalize(&base.join(path.trim_start_matches('/')));
                if target.is_dir() {
                    target.join("index.html")
                } else {
                    target
                }
            };
            let shown = || {
                format!(
                    "{}: {link}",
                    page.strip_prefix(site).unwrap_or(page).display()
                )
            };
            if !target.starts_with(site) || !target.is_file() {
                broken.push(format!("{} (no such file)", shown()));
            } else if let Some(fragment) = fragment.filter(|f| wants_anchor(&target, f))
                && !has_anchor(ids.of(&target)?, &fragment)
            {
                broken.push(format!("{} (no such anchor)", shown()));
            }
        }
    }
    let readme = root().join("README.md");
    let text = fs::read_to_string(&readme).map_err(|e| e.to_string())?;
    let own: HashSet<String> = headings(&text).iter().map(|h| github_slug(h)).collect();
    for link in markdown_links(&text) {
        let Some((path, fragment)) = internal(&link) else {
            continue;
        };
        links += 1;
        let fragment_ok =
            |ids: &HashSet<String>| fragment.as_ref().is_none_or(|f| has_anchor(ids, f));
        let ok = if path.is_empty() {
            fragment_ok(&own)
        } else if let Some(chapter) = path
            .strip_prefix("docs/guide/")
            .and_then(|p| p.strip_suffix(".md"))
        {
            let built = site.join(format!("{chapter}.html"));
            root().join(path).is_file() && built.is_file() && fragment_ok(ids.of(&built)?)
        } else {
            root().join(path).exists()
        };
        if !ok {
            broken.push(format!("README.md: {link}"));
        }
    }
    if broken.is_empty() {
        return Ok(Checked {
            pages: pages.len(),
            links,
        });
    }
    let count = broken.len();
    broken.truncate(30);
    Err(format!(
        "{count} broken links in the docs:\n  {}",
        broken.join("\n  ")
    ))
}

/// Whether a fragment names an element: rustdoc's source pages take line
/// numbers (`#12-20`), which their script highlights, not ids.
fn wants_anchor(target: &Path, fragment: &str) -> bool {
    let source_lines = fragment
        .split('-')
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    !(source_lines && target.components().any(|c| c.as_os_str() == "src"))
        && target.extension().is_some_and(|e| e == "html")
}

/// Whether `ids` holds the fragment as written or percent-decoded (rustdoc's
/// ids keep their `%3C`; the guide's are plain).
fn has_anchor(ids: &HashSet<String>, fragment: &str) -> bool {
    ids.contains(fragment) || ids.contains(&percent_decode(fragment))
}

/// The ids of each page, read once.
#[derive(Default)]
struct Anchors(HashMap<PathBuf, HashSet<String>>);

impl Anchors {
    fn of(&mut self, page: &Path) -> Result<&HashSet<String>> {
        if !self.0.contains_key(page) {
            let text = fs::read_to_string(page).map_err(|e| format!("{}: {e}", page.display()))?;
            let ids = attributes(&text, &["id", "name"]).collect();
            self.0.insert(page.to_owned(), ids);
        }
        Ok(&self.0[page])
    }
}

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result {
    for entry in fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            html_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    Ok(())
}

/// The values of the attributes `names` (`name="value"` or `name='value'`,
/// preceded by whitespace), entities `&amp;` `&quot;` decoded.
fn attributes<'t>(text: &'t str, names: &'t [&'t str]) -> impl Iterator<Item = String> + 't {
    let bytes = text.as_bytes();
    (0..bytes.len()).filter_map(move |i| {
        if i == 0 || !bytes[i - 1].is_ascii_whitespace() {
            return None;
        }
        let name = names
            .iter()
            .find(|n| text[i..].starts_with(&format!("{n}=")))?;
        let rest = &text[i + name.len() + 1..];
        let quote = rest.chars().next().filter(|&q| q == '"' || q == '\'')?;
        let end = rest[1..].find(quote)?;
        Some(
            rest[1..1 + end]
                .replace("&amp;", "&")
                .replace("&quot;", "\"")
                .replace("&#39;", "'"),
        )
    })
}

/// A link's path and fragment (percent-decoded), if it stays inside the
/// site or the repository: no scheme, not protocol-relative.
fn internal(link: &str) -> Option<(String, Option<String>)> {
    let link = link.trim();
    let scheme = link.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
    });
    // A template's placeholder (`${url}` in a script) is no link.
    if link.is_empty()
        || scheme
        || link.starts_with("//")
        || link.contains("{{")
        || link.contains("${")
    {
        return None;
    }
    let (path, fragment) = match link.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment.to_owned())),
        None => (link, None),
    };
    let path = path.split('?').next().unwrap_or_default();
    Some((percent_decode(path), fragment.filter(|f| !f.is_empty())))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `path` with `.` and `..` taken out, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The lines of a markdown text outside its fenced code blocks.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The targets of a markdown text's inline links and images, `[..](target)`,
/// outside code blocks.
fn markdown_links(text: &str) -> Vec<String> {
    let mut out = vec![];
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(
                after[..end]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_owned(),
            );
            rest = &after[end..];
        }
    }
    out
}

/// The text of a markdown file's ATX headings, outside code blocks.
fn headings(text: &str) -> Vec<String> {
    prose(text)
        .filter(|line| line.starts_with('#'))
        .map(|line| line.trim_start_matches('#').trim().to_owned())
        .collect()
}

/// The anchor GitHub gives a heading: lower case, spaces to `-`, every
/// character but letters, digits, `-` and `_` dropped.
fn github_slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_read_with_either_quote_and_entities_decoded() {
        let html = r#"<a href="a.html#x">a</a> <img src='i.png'> <p data-href="no" id="b&amp;c">"#;
        let found: Vec<String> = attributes(html, &["href", "src", "id"]).collect();
        assert_eq!(found, ["a.html#x", "i.png", "b&c"]);
    }

    #[test]
    fn only_links_without_a_scheme_are_internal() {
        assert_eq!(internal("https://x.org/a"), None);
        assert_eq!(internal("mailto:a@b"), None);
        assert_eq!(internal("//cdn/x.js"), None);
        assert_eq!(
            internal("../api/a%20b.html?x=1#frag%2E"),
            Some(("../api/a b.html".to_owned(), Some("frag%2E".to_owned())))
        );
        assert_eq!(
            internal("#top"),
            Some((String::new(), Some("top".to_owned())))
        );
    }

    #[test]
    fn github_slugs_drop_punctuation() {
        assert_eq!(github_slug("Quick start"), "quick-start");
        assert_eq!(
            github_slug("Files: `.npy`, safetensors"),
            "files-npy-safetensors"
        );
    }

    #[test]
    fn markdown_links_skip_code_blocks() {
        let text = "see [a](a.md#x) and ![i](i.png)\n```text\n[no](no.md)\n```\n";
        assert_eq!(markdown_links(text), ["a.md#x", "i.png"]);
    }

    #[test]
    fn headings_skip_code_blocks() {
        let text = "# One\n```python\n# a comment\n```\n## Two: `x`\n";
        assert_eq!(headings(text), ["One", "Two: `x`"]);
    }

    #[test]
    fn source_line_fragments_are_not_anchors() {
        assert!(!wants_anchor(
            Path::new("api/rust/src/bytelens/lib.rs.html"),
            "12-20"
        ));
        assert!(wants_anchor(
            Path::new("api/rust/bytelens/index.html"),
            "12"
        ));
        assert!(wants_anchor(Path::new("views.html"), "in-python"));
    }

    #[test]
    fn paths_are_normalized_without_the_file_system() {
        assert_eq!(
            normalize(Path::new("/a/b/../c/./d")),
            PathBuf::from("/a/c/d")
        );
    }
}
