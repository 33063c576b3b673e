//! The layers, checked from the source: every `crate::`, `super::` and `self::` path in
//! `src/` (outside unit-test modules) is resolved to the module it names, and the graph must
//! keep its direction — the engine never reaches a face, the two faces (`cli`, `tui`) never
//! reach each other, the top-level modules form no cycle, and no modules form a cycle of
//! imports of any length, within a folder or across folders (a child using its parent, or a
//! parent its child, is one module's inside); a cycle is named with what each module in it
//! takes from the next.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

/// Module → the modules it refers to → the names it takes from each.
type Graph = BTreeMap<Module, BTreeMap<Module, BTreeSet<String>>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/tui/view/calls.rs` → `["tui", "view", "calls"]`; `src/lib.rs` → `[]`.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [only] if only == "lib" || only == "main" => Vec::new(),
        _ => parts,
    }
}

/// The code of a file without comments, string literals and its `#[cfg(test)]` module.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if !in_str && c == '/' && chars.peek() == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && prev != '\'' {
                in_str = !in_str;
            } else if !in_str {
                out.push(c);
            }
            prev = c;
        }
        out.push('\n');
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads `a::b::c` (or a `{...}` group) starting right after a `::`; returns every full path
/// the text names (a group fans out into one path per item).
fn paths_after(rest: &str) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut s = rest;
    loop {
        if let Some(group) = s.strip_prefix('{') {
            let mut depth = 1;
            let mut end = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    end = i;
                    break;
                }
            }
            let inner = &group[..end];
            let mut items = Vec::new();
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        items.push(&inner[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            items.push(&inner[start..]);
            let mut out = Vec::new();
            for item in items {
                let item = item.trim();
                if item.is_empty() {
                    continue;
                }
                for tail in paths_after(item) {
                    let mut p = segs.clone();
                    p.extend(tail);
                    out.push(p);
                }
            }
            return if out.is_empty() { vec![segs] } else { out };
        }
        let ident: String = s.chars().take_while(|c| is_ident(*c)).collect();
        if ident.is_empty() {
            return vec![segs];
        }
        s = &s[ident.len()..];
        segs.push(ident);
        match s.strip_prefix("::") {
            Some(next) => s = next,
            None => return vec![segs],
        }
    }
}

/// Every module each module refers to.
fn graph() -> BTreeMap<Module, BTreeSet<Module>> {
    labelled_graph()
        .into_iter()
        .map(|(m, t)| (m, t.into_keys().collect()))
        .collect()
}

/// Every module each module refers to, with the names it takes from each (the first name
/// after the module's path: `Delivered` of `crate::mcp::session::Delivered`).
fn labelled_graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files
        .iter()
        .map(|f| (module_of(&src, f), f.clone()))
        .collect();
    let mut edges: Graph = BTreeMap::new();
    for (module, file) in &modules {
        if file.ends_with("main.rs") {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(file).expect("read"));
        for anchor in ["crate::", "super::", "self::"] {
            let mut from = 0;
            while let Some(i) = code[from..].find(anchor) {
                let at = from + i;
                from = at + anchor.len();
                if code[..at].chars().next_back().is_some_and(is_ident) {
                    continue;
                }
                let base: Module = match anchor {
                    "crate::" => Vec::new(),
                    "super::" => module[..module.len().saturating_sub(1)].to_vec(),
                    _ => module.clone(),
                };
                // `super::super::x` climbs twice.
                let mut base = base;
                let mut rest = &code[from..];
                while let Some(r) = rest.strip_prefix("super::") {
                    base.pop();
                    rest = r;
                }
                for tail in paths_after(rest) {
                    let mut full = base.clone();
                    full.extend(tail);
                    let target = (0..=full.len())
                        .rev()
                        .map(|k| full[..k].to_vec())
                        .find(|m| modules.contains_key(m))
                        .unwrap_or_default();
                    if &target != module {
                        let taken = full
                            .get(target.len())
                            .cloned()
                            .unwrap_or_else(|| "*".into());
                        edges
                            .entry(module.clone())
                            .or_default()
                            .entry(target)
                            .or_default()
                            .insert(taken);
                    }
                }
            }
        }
    }
    edges
}

fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

fn is_face(m: &Module) -> bool {
    matches!(m.first().map(String::as_str), Some("cli" | "tui"))
}

#[test]
fn the_graph_is_read() {
    // The reader must see the edges we know exist, or every other test here passes vacuously.
    let g = graph();
    let has = |a: &str, b: &str| {
        let a: Module = a.split("::").map(str::to_owned).collect();
        let b: Module = b.split("::").map(str::to_owned).collect();
        g.get(&a).is_some_and(|t| t.contains(&b))
    };
    assert!(
        has("cli::trace", "document"),
        "cli::trace uses the document layer"
    );
    assert!(has("tui::runtime", "tui::view"), "a super:: import");
    assert!(has("document", "cassette"), "a grouped crate:: import");
    assert!(
        has("tui::view::calls", "tui::app"),
        "a super::super:: import"
    );
}

#[test]
fn the_explorer_never_reaches_into_the_command_line() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("tui.rs")];
    rust_files(&src.join("tui"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read");
        assert!(
            !text.contains("crate::cli"),
            "{} names crate::cli",
            f.display()
        );
    }
    for (from, targets) in graph() {
        for to in targets {
            let (a, b) = (from.first(), to.first());
            if is_face(&from) && is_face(&to) {
                assert_eq!(
                    a,
                    b,
                    "{} reaches into the other face: {}",
                    name(&from),
                    name(&to)
                );
            }
        }
    }
}

#[test]
fn the_engine_never_reaches_a_face() {
    for (from, targets) in graph() {
        if is_face(&from) {
            continue;
        }
        for to in targets {
            assert!(
                !is_face(&to),
                "{} (library) uses {}",
                name(&from),
                name(&to)
            );
        }
    }
}

#[test]
fn no_two_modules_import_each_other() {
    let g = graph();
    let ancestor = |a: &Module, b: &Module| b.starts_with(a) || a.starts_with(b);
    let mut cycles = Vec::new();
    for (a, targets) in &g {
        for b in targets {
            if a < b && !ancestor(a, b) && g.get(b).is_some_and(|t| t.contains(a)) {
                cycles.push(format!("{} <-> {}", name(a), name(b)));
            }
        }
    }
    assert!(
        cycles.is_empty(),
        "modules importing each other: {cycles:?}"
    );
}

#[test]
fn the_top_level_layers_form_no_cycle() {
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph() {
        for to in targets {
            if let (Some(a), Some(b)) = (from.first(), to.first())
                && a != b
            {
                top.entry(a.clone()).or_default().insert(b.clone());
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        top: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(n) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == n) {
            panic!("cycle: {} -> {n}", path[i..].join(" -> "));
        }
        path.push(n.to_owned());
        for m in top.get(n).into_iter().flatten() {
            visit(m, top, path, done);
        }
        path.pop();
        done.insert(n.to_owned());
    }
    let mut done = BTreeSet::new();
    for n in top.keys() {
        visit(n, &top, &mut Vec::new(), &mut done);
    }
    assert!(done.contains("document") && done.contains("cli"));
}

/// The cycles of `g`, one per strongly connected set of two or more modules, each written as
/// `a -> b (Names) -> c (Names) -> a (Names)`: the names are what each module takes from the
/// next. Edges between a module and its own ancestor are left out (a folder's module is its
/// children's inside: `mcp` declaring `mcp::http`, `mcp::http` using `super::Item`).
fn cycles(g: &Graph) -> Vec<String> {
    let ancestor = |a: &Module, b: &Module| b.starts_with(a) || a.starts_with(b);
    let next = |m: &Module| -> Vec<Module> {
        g.get(m)
            .into_iter()
            .flatten()
            .filter(|(t, _)| !ancestor(m, t))
            .map(|(t, _)| t.clone())
            .collect()
    };
    // Tarjan's strongly connected components, iteratively.
    let nodes: BTreeSet<Module> = g
        .iter()
        .flat_map(|(m, t)| std::iter::once(m.clone()).chain(t.keys().cloned()))
        .collect();
    let mut index: BTreeMap<Module, usize> = BTreeMap::new();
    let mut low: BTreeMap<Module, usize> = BTreeMap::new();
    let mut on_stack: BTreeSet<Module> = BTreeSet::new();
    let mut stack: Vec<Module> = Vec::new();
    let mut sets: Vec<Vec<Module>> = Vec::new();
    let mut counter = 0;
    for root in &nodes {
        if index.contains_key(root) {
            continue;
        }
        let mut work: Vec<(Module, usize)> = vec![(root.clone(), 0)];
        while let Some((v, i)) = work.pop() {
            if i == 0 {
                index.insert(v.clone(), counter);
                low.insert(v.clone(), counter);
                counter += 1;
                stack.push(v.clone());
                on_stack.insert(v.clone());
            }
            let targets = next(&v);
            if let Some(w) = targets.get(i) {
                work.push((v.clone(), i + 1));
                if !index.contains_key(w) {
                    work.push((w.clone(), 0));
                } else if on_stack.contains(w) {
                    let l = low[&v].min(index[w]);
                    low.insert(v.clone(), l);
                }
                continue;
            }
            if low[&v] == index[&v] {
                let mut set = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack.remove(&w);
                    let done = w == v;
                    set.push(w);
                    if done {
                        break;
                    }
                }
                if set.len() > 1 {
                    sets.push(set);
                }
            }
            if let Some((parent, _)) = work.last() {
                let l = low[parent].min(low[&v]);
                low.insert(parent.clone(), l);
            }
        }
    }
    // One cycle through each set: the shortest way back to its smallest module.
    let mut out = Vec::new();
    for set in sets {
        let members: BTreeSet<Module> = set.into_iter().collect();
        let Some(start) = members.iter().next().cloned() else {
            continue;
        };
        let mut came_from: BTreeMap<Module, Module> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.clone()]);
        let mut back = None;
        while let Some(v) = queue.pop_front() {
            for w in next(&v).into_iter().filter(|w| members.contains(w)) {
                if w == start {
                    back = Some(v.clone());
                    break;
                }
                if !came_from.contains_key(&w) {
                    came_from.insert(w.clone(), v.clone());
                    queue.push_back(w);
                }
            }
            if back.is_some() {
                break;
            }
        }
        let Some(mut v) = back else { continue };
        let mut path = vec![start.clone()];
        let mut rev = Vec::new();
        while v != start {
            rev.push(v.clone());
            v = came_from[&v].clone();
        }
        rev.reverse();
        path.extend(rev);
        path.push(start);
        let mut line = name(&path[0]);
        for pair in path.windows(2) {
            let names: Vec<&str> = g[&pair[0]][&pair[1]].iter().map(String::as_str).collect();
            line.push_str(&format!(" -> {} ({})", name(&pair[1]), names.join(", ")));
        }
        out.push(line);
    }
    out
}

#[test]
fn the_cycle_finder_finds_a_long_cycle_and_names_what_each_takes() {
    let m = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    let mut g: Graph = BTreeMap::new();
    let mut edge = |a: &str, b: &str, what: &str| {
        g.entry(m(a))
            .or_default()
            .entry(m(b))
            .or_default()
            .insert(what.to_owned());
    };
    edge("x::a", "x::b", "B");
    edge("x::b", "y::c", "C");
    edge("y::c", "x::a", "A");
    edge("y::c", "z", "Z");
    // A parent and its child are one module's inside: no cycle.
    edge("p", "p::q", "Q");
    edge("p::q", "p", "P");
    assert_eq!(
        cycles(&g),
        ["x::a -> x::b (B) -> y::c (C) -> x::a (A)"],
        "one cycle of three, named with what each takes"
    );
    // Without the closing edge there is none.
    g.get_mut(&m("y::c")).map(|t| t.remove(&m("x::a")));
    assert!(cycles(&g).is_empty());
}

#[test]
fn the_modules_form_no_cycle() {
    let found = cycles(&labelled_graph());
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}
