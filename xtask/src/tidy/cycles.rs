//! The module graph of each crate: which top-level modules (a file or folder directly
//! under `src/`, its children counted as it) name which others, through `crate::` paths
//! and a top-level file's `super::`, test code left out (a `tests.rs` or `*_tests.rs`,
//! and whatever follows a `#[cfg(test)]`); and the cycles in it. Dependencies between the
//! modules of a crate point one way, as between crates (rust-analyzer's rule): a cycle
//! means neither module can be read, tested or moved without the other.

use std::collections::{BTreeMap, BTreeSet};

/// Edges `from -> to` between the top-level modules of one crate.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

/// The graph of one crate from its sources, `(path under src/, text)`.
pub fn graph(files: &[(String, String)]) -> Graph {
    let mut graph = Graph::new();
    for (path, text) in files {
        let Some(module) = top_module(path) else {
            continue;
        };
        let file = path.rsplit('/').next().unwrap_or(path);
        if file == "tests.rs" || file.ends_with("_tests.rs") {
            continue;
        }
        let top_file = !path.contains('/');
        let edges = graph.entry(module.clone()).or_default();
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with("#[cfg(test)]") {
                break;
            }
            // Comments (doc links included) name modules without using them.
            if code.starts_with("//") {
                continue;
            }
            for named in named_modules(code, "crate::") {
                edges.insert(named);
            }
            if top_file {
                for named in named_modules(code, "super::") {
                    edges.insert(named);
                }
            }
        }
        edges.remove(&module);
    }
    graph
}

/// `foo` for `foo.rs` and `foo/...`; none for the crate root (`lib.rs`, `main.rs`).
fn top_module(path: &str) -> Option<String> {
    let first = path.split('/').next()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_owned())
}

/// The first segment of every path after `prefix` in `code`, with `prefix::{a, b::c}`
/// giving `a` and `b`.
fn named_modules(code: &str, prefix: &str) -> Vec<String> {
    let mut named = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        // `super::` inside `super::super::` or an identifier ending in `crate` is not ours.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = true;
            for (index, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if start && (c.is_alphanumeric() || c == '_') => {
                        named.push(identifier(&group[index..]));
                        start = false;
                    }
                    c if !c.is_whitespace() => start = false,
                    _ => {}
                }
            }
        } else {
            let name = identifier(rest);
            if !name.is_empty() && name != "super" {
                named.push(name);
            }
        }
    }
    named.retain(|name| name != "self");
    named
}

fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every cycle of the graph, as the modules of each strongly connected component of more
/// than one module (Tarjan's algorithm), sorted.
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let next = self.index.len();
            self.index.insert(node, next);
            self.low.insert(node, next);
            self.stack.push(node);
            self.on_stack.insert(node);
            for to in self.graph.get(node).into_iter().flatten() {
                let to = to.as_str();
                if !self.graph.contains_key(to) {
                    continue;
                }
                if !self.index.contains_key(to) {
                    self.visit(to);
                    let low = self.low[node].min(self.low[to]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(to) {
                    let low = self.low[node].min(self.index[to]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}

#[test]
fn the_cycle_finder_finds_cycles_and_only_cycles() {
    let files = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(path, text)| ((*path).to_owned(), (*text).to_owned()))
            .collect()
    };
    let tangled = graph(&files(&[
        ("lib.rs", "pub mod a;\npub mod b;\nuse crate::c::X;"),
        (
            "a.rs",
            "use crate::{b::{Y, Z}, self};\n/// [`crate::d`] in a comment\n",
        ),
        ("b/mod.rs", "mod inner;\n"),
        (
            "b/inner.rs",
            "use crate::c::W; use super::super::a; fn f() { crate::a::go() }",
        ),
        ("c.rs", "use super::d::V;"),
        ("d.rs", "let crate_x = 1; fn g() -> mycrate::e::T {}"),
        (
            "e.rs",
            "use crate::e::Own;\n#[cfg(test)]\nmod tests { use crate::a; }",
        ),
        ("e/e_tests.rs", "use crate::a;"),
    ]));
    assert_eq!(tangled["a"], BTreeSet::from(["b".to_owned()]));
    assert_eq!(
        tangled["b"],
        BTreeSet::from(["a".to_owned(), "c".to_owned()])
    );
    assert!(tangled["d"].is_empty(), "{:?}", tangled["d"]);
    assert!(tangled["e"].is_empty(), "a module naming itself is no edge");
    assert_eq!(cycles(&tangled), vec![vec!["a".to_owned(), "b".to_owned()]]);
    let straight = graph(&files(&[
        ("a.rs", "use crate::b;"),
        ("b.rs", "use crate::c;"),
        ("c.rs", ""),
    ]));
    assert!(cycles(&straight).is_empty());
}
