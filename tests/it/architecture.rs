//! `ARCHITECTURE.md` and `docs/design.md` name files and types instead of linking them, so
//! that they do not rot; this test is what keeps that true. Every backticked token that looks
//! like a repository path must exist, and every one that looks like a Rust name (a
//! `CamelCase` type, optionally `Type::member`; a `SCREAMING_CASE` constant; a `module::item`
//! path) must be declared somewhere under `src/` or `cli/src/`. Names of other crates
//! (`std::…`, `redb::…`) are not checked. Every name the map says the crate root re-exports
//! must be re-exported there, and each layer may import only what its row allows.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The crates whose items the document may name without their being declared here.
const FOREIGN_CRATES: &[&str] = &[
    "std", "core", "alloc", "redb", "tokio", "serde", "bincode", "blake3", "clap",
];

/// Prelude names a sentence may put in backticks (`Some(n)`, `None`).
const PRELUDE: &[&str] = &[
    "Some", "None", "Ok", "Err", "Option", "Vec", "String", "Box",
];

/// The documents whose names are checked.
const DOCUMENTS: &[&str] = &["ARCHITECTURE.md", "docs/design.md"];

#[test]
fn every_path_and_name_in_the_architecture_documents_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let declarations = Declarations::of(&[
        root.join("src"),
        root.join("format/src"),
        root.join("cli/src"),
    ]);
    for document in DOCUMENTS {
        let doc = fs::read_to_string(root.join(document)).expect("read the document");
        let missing = missing(&doc, root, &declarations);
        assert!(
            missing.is_empty(),
            "{document} names what the repository does not have:\n  {}",
            missing.join("\n  ")
        );
    }
}

#[test]
fn architecture_md_is_a_map_not_an_atlas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bytes = fs::metadata(root.join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md")
        .len();
    assert!(
        bytes <= 20 * 1024,
        "ARCHITECTURE.md is {bytes} bytes: at most 20 KiB"
    );
}

/// The names the "The root re-exports" item of ARCHITECTURE.md's public API gives.
fn root_reexports_named(doc: &str) -> Vec<String> {
    let Some(at) = doc.find("- The root re-exports") else {
        return Vec::new();
    };
    let item = &doc[at..];
    let end = item[1..].find("\n- ").map_or(item.len(), |end| end + 1);
    item[..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The `pub use …;` statements of `src/lib.rs`, each on one line.
fn pub_use_statements(lib: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut statement = String::new();
    for line in lib.lines() {
        let line = line.trim();
        if statement.is_empty() && !line.starts_with("pub use ") {
            continue;
        }
        statement.push_str(line);
        statement.push(' ');
        if line.ends_with(';') {
            statements.push(std::mem::take(&mut statement));
        }
    }
    statements
}

/// The names one `pub use` statement exports (`as` renames: `records as history` exports
/// `history`, not `records`), with the words `pub` and `use` and the paths' modules.
fn exported_names(statement: &str) -> Vec<String> {
    let words: Vec<&str> = statement
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .collect();
    words
        .iter()
        .enumerate()
        .filter(|(at, _)| words.get(at + 1) != Some(&"as"))
        .map(|(_, word)| (*word).to_owned())
        .collect()
}

/// The names `src/lib.rs` re-exports at the crate root (`pub use …` lines, `as` renames).
fn root_reexports(lib: &str) -> HashSet<String> {
    pub_use_statements(lib)
        .iter()
        .flat_map(|statement| exported_names(statement))
        .collect()
}

#[test]
fn every_name_the_map_calls_public_at_the_root_is_re_exported_there() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let exported = root_reexports(&lib);
    let named = root_reexports_named(&doc);
    assert!(
        named.len() >= 10,
        "the public API's root item was not found"
    );
    let missing: Vec<&String> = named
        .iter()
        .filter(|name| !exported.contains(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md calls public what the root does not re-export: {missing:?}"
    );
}

/// The most names and modules the crate root may give: a thin front door (issue 53).
const ROOT_NAMES_MAX: usize = 45;

/// What the crate root gives, in `src/lib.rs`'s order: each `pub mod` (whatever feature it
/// needs) and each name a `pub use` re-exports there (`as` renames: the new name).
fn root_names(lib: &str) -> Vec<String> {
    let mut names: Vec<String> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod "))
        .map(|rest| rest.trim_end_matches(';').to_owned())
        .collect();
    for statement in pub_use_statements(lib) {
        let path = statement
            .trim()
            .trim_start_matches("pub use ")
            .trim_end_matches(';');
        let items: Vec<&str> = match (path.find('{'), path.rfind('}')) {
            (Some(open), Some(close)) => path[open + 1..close].split(',').collect(),
            _ => vec![path],
        };
        for item in items
            .iter()
            .map(|item| item.trim())
            .filter(|item| !item.is_empty())
        {
            let name = item.rsplit([' ', ':']).next().unwrap_or(item);
            names.push(name.to_owned());
        }
    }
    names
}

#[test]
fn the_crate_root_gives_at_most_45_names_and_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let names = root_names(&lib);
    assert!(
        names.len() <= ROOT_NAMES_MAX,
        "the crate root gives {} names and modules, at most {ROOT_NAMES_MAX}: {names:?}",
        names.len()
    );
}

#[test]
fn the_root_count_takes_every_public_module_and_re_exported_name() {
    let lib = "pub mod audit;\n#[cfg(feature = \"witness\")]\npub mod witness;\n\
               pub(crate) mod log;\n#[doc(inline)]\npub use annals_format::merkle;\n\
               pub use store::{Store,\n    Sharing};\npub(crate) use annals_format::hash;\n\
               pub use audit::history::{Entity, records as history};\n";
    assert_eq!(
        root_names(lib),
        [
            "audit", "witness", "merkle", "Store", "Sharing", "Entity", "history"
        ]
    );
}

#[test]
fn every_module_of_the_crate_has_a_row_in_the_layer_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let modules = top_modules(root);
    let rowed: Vec<String> = layers(&doc, &modules)
        .iter()
        .flat_map(layer_modules)
        .collect();
    let missing: Vec<&String> = modules.iter().filter(|m| !rowed.contains(m)).collect();
    assert!(
        missing.is_empty(),
        "modules of src/lib.rs in no row of ARCHITECTURE.md's layer table: {missing:?}"
    );
}

#[test]
fn a_name_called_public_but_not_re_exported_is_reported() {
    let lib = "pub use store::{Store, Sharing};\npub use audit::history::{Entity, records as history};\npub(crate) use log::CHECKPOINTS;\n";
    let exported = root_reexports(lib);
    for name in ["Store", "Sharing", "Entity", "history"] {
        assert!(exported.contains(name), "{name}");
    }
    for name in ["CHECKPOINTS", "records", "AT_HEAD"] {
        assert!(!exported.contains(name), "{name}");
    }
    let doc =
        "## Public API\n\n- The root re-exports `Store` and `AT_HEAD`.\n- `leases`: its own.\n";
    assert_eq!(root_reexports_named(doc), ["Store", "AT_HEAD"]);
}

#[test]
fn a_misspelt_path_or_name_is_reported() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let declarations = Declarations::of(&[root.join("src")]);
    let doc = "`src/store/mod.rs` and `src/store/mdo.rs`: `Store`, `Stor`, `Store::open`, \
               `Store::opne`, `Error::Corrupt`, `Error::Corupt`, `AT_HEAD`, `AT_HAED`, \
               `record::decode_stored`, `record::decode_stroed`, `view.rs`, `veiw.rs`, \
               `std::collections::BTreeMap`, `<path>.creating`, `Table<K, V>`, `Some(n)`, \
               `target/side_by_side.json`, `ANNALS_BENCH_BATCHES=1`";
    assert_eq!(
        missing(doc, root, &declarations),
        [
            "path src/store/mdo.rs",
            "type Stor",
            "member Store::opne",
            "member Error::Corupt",
            "constant AT_HAED",
            "item record::decode_stroed",
            "path veiw.rs",
        ]
    );
}

/// What `doc` names that is missing, in the order it names it, each once.
fn missing(doc: &str, root: &Path, declarations: &Declarations) -> Vec<String> {
    let files = repository_paths(root);
    let mut seen = HashSet::new();
    let mut missing = Vec::new();
    // Code spans are the odd pieces between backticks (the document has no fenced blocks).
    for span in doc.split('`').skip(1).step_by(2) {
        let token = span.trim().trim_end_matches([':', ',', '.', ';', ')']);
        if !seen.insert(token) {
            continue;
        }
        if let Some(problem) = check(token, root, &files, declarations) {
            missing.push(problem);
        }
    }
    missing
}

/// Why `token` names something missing, or `None` when it exists or is not checked.
fn check(
    token: &str,
    root: &Path,
    files: &[String],
    declarations: &Declarations,
) -> Option<String> {
    let path_like = token.contains('/')
        || [".rs", ".md", ".json", ".toml"]
            .iter()
            .any(|extension| token.ends_with(extension));
    if path_like {
        // Placeholders (`fuzz/corpus/<target>/`), globs, commands with arguments and build
        // output (absent from a fresh clone) are not paths to check.
        let checked = !token.contains(['<', '*', ' ', '…']) && !token.starts_with("target/");
        let found = root.join(token).exists()
            || files
                .iter()
                .any(|file| file.ends_with(&format!("/{}", token.trim_end_matches('/'))));
        return (checked && !found).then(|| format!("path {token}"));
    }
    // The leading Rust path of the token: `Table<K, V>` is `Table`, `Snapshot::state()` is
    // `Snapshot::state`.
    let end = token
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(token.len());
    let segments: Vec<&str> = token[..end].split("::").collect();
    // `NAME=1` sets an environment variable.
    if token[end..].starts_with('=')
        || segments.iter().any(|segment| !is_identifier(segment))
        || FOREIGN_CRATES.contains(&segments[0])
    {
        return None;
    }
    match segments.iter().position(|segment| is_camel_case(segment)) {
        Some(at) => {
            let (name, member) = (segments[at], segments.get(at + 1));
            if PRELUDE.contains(&name) {
                None
            } else if !declarations.types.contains(name) {
                Some(format!("type {name}"))
            } else {
                member
                    .filter(|member| !declarations.items.contains(**member))
                    .map(|member| format!("member {name}::{member}"))
            }
        }
        None => {
            let last = segments[segments.len() - 1];
            if is_screaming_case(last) && !declarations.items.contains(last) {
                Some(format!("constant {last}"))
            } else if segments.len() > 1
                && !is_screaming_case(last)
                && !declarations.items.contains(last)
            {
                Some(format!("item {}", segments.join("::")))
            } else {
                None
            }
        }
    }
}

fn is_identifier(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_camel_case(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.contains(|c: char| c.is_ascii_lowercase())
        && !word.contains('_')
}

fn is_screaming_case(word: &str) -> bool {
    word.len() > 1
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The names declared in the crate's source, read line by line (comments skipped).
struct Declarations {
    /// Declared by `struct`, `enum`, `trait`, `type` or `union`.
    types: HashSet<String>,
    /// Declared by `fn`, `const`, `static` or `mod`, or as an enum variant: a line that opens
    /// with a `CamelCase` name and then ends, or goes on with `,`, ` {`, `(` or ` =`.
    items: HashSet<String>,
}

impl Declarations {
    fn of(sources: &[PathBuf]) -> Declarations {
        let mut declarations = Declarations {
            types: HashSet::new(),
            items: HashSet::new(),
        };
        for file in sources.iter().flat_map(|src| rust_files(src)) {
            let text = fs::read_to_string(&file).expect("read a source file");
            for line in text.lines().map(str::trim) {
                if !line.starts_with("//") {
                    declarations.read(line);
                }
            }
        }
        declarations
    }

    fn read(&mut self, line: &str) {
        let words: Vec<&str> = line
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| !word.is_empty())
            .collect();
        for pair in words.windows(2) {
            let set = match pair[0] {
                "struct" | "enum" | "trait" | "type" | "union" => &mut self.types,
                "fn" | "const" | "static" | "mod" => &mut self.items,
                _ => continue,
            };
            set.insert(pair[1].to_owned());
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(line.len());
        let (name, rest) = line.split_at(name_end);
        let variant_like = rest.is_empty()
            || [",", " {", "(", " ="]
                .iter()
                .any(|next| rest.starts_with(next));
        if is_camel_case(name) && variant_like {
            self.items.insert(name.to_owned());
        }
    }
}

/// Every `.rs` file under `dir`.
/// Whether `file` is a module of tests (`tests.rs`, compiled only under `cfg(test)`): like a
/// `#[cfg(test)]` part, it is left out of the import rules.
fn is_tests_module(file: &Path) -> bool {
    file.file_name().is_some_and(|name| name == "tests.rs")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("read a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|extension| extension == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// Every file and folder of the repository relative to `root`, with `/` between components,
/// leaving out build output and hidden folders.
fn repository_paths(root: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("read a repository folder") {
            let path = entry.expect("a folder entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let relative = path.strip_prefix(root).expect("under the root");
            let components: Vec<_> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            paths.push(format!("/{}", components.join("/")));
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    paths
}

/// The top-level modules of the crate that `crate::<module>` may name.
fn top_modules(root: &Path) -> Vec<String> {
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    lib.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_owned())
        })
        .collect()
}

/// The domains, which a layer's rule may name together as "the domains".
const DOMAINS: &[&str] = &[
    "registry",
    "leases",
    "outbox",
    "runs",
    "consumers",
    "ingest",
];

/// One row of the layer table: its name, its code's paths, the modules it may import (`None`:
/// any).
struct Layer {
    name: String,
    code: Vec<String>,
    imports: Option<Vec<String>>,
}

/// The layer table of ARCHITECTURE.md, in its order (bottom up).
fn layers(doc: &str, modules: &[String]) -> Vec<Layer> {
    let mut layers: Vec<Layer> = Vec::new();
    for row in doc.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = row
            .split(" | ")
            .map(|c| c.trim_matches(['|', ' ']))
            .collect();
        if cells.len() != 5 || cells[0] == "layer" {
            continue;
        }
        let ticked = |cell: &str| -> Vec<String> {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect()
        };
        let code = ticked(cells[1])
            .into_iter()
            .filter(|p| p.starts_with("src/"))
            .collect();
        let rule = cells[4];
        let imports = if rule.starts_with("anything") {
            None
        } else {
            let mut allowed: Vec<String> = ticked(rule)
                .into_iter()
                .filter(|m| modules.contains(m))
                .collect();
            if rule.contains("the domains") {
                allowed.extend(DOMAINS.iter().map(|d| (*d).to_owned()));
            }
            if rule.contains("the layers before it") {
                for layer in &layers {
                    allowed.extend(layer_modules(layer));
                }
            }
            Some(allowed)
        };
        layers.push(Layer {
            name: cells[0].to_owned(),
            code,
            imports,
        });
    }
    layers
}

/// The top-level modules a layer's code is.
fn layer_modules(layer: &Layer) -> Vec<String> {
    layer
        .code
        .iter()
        .map(|path| {
            let path = path.strip_prefix("src/").unwrap_or(path);
            path.split(['/', '.']).next().unwrap_or(path).to_owned()
        })
        .collect()
}

/// Every top-level module `source` names as `crate::<module>` (or in `use crate::{…}`), or
/// through a name the crate root re-exports (`crate::Error` names `error`), outside comments
/// and its `#[cfg(test)]` part.
fn crate_modules(
    source: &str,
    modules: &[String],
    reexported: &HashMap<String, String>,
) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or(source);
    let mut named = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let group = rest.strip_prefix('{').unwrap_or(rest);
            for part in group.split(',') {
                let word: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                // A name re-exported from another crate (the format's `Digest`) is no module
                // of this one: the compiler holds that crate's layer.
                let module = if modules.contains(&word) {
                    Some(&word)
                } else {
                    reexported
                        .get(&word)
                        .filter(|module| modules.contains(module))
                };
                if let Some(module) = module
                    && !named.contains(module)
                {
                    named.push(module.clone());
                }
                if !rest.starts_with('{') {
                    break;
                }
            }
        }
    }
    named
}

/// Each name `src/lib.rs` re-exports at the crate root, and the module it comes from.
fn root_reexport_modules(lib: &str) -> HashMap<String, String> {
    let mut from = HashMap::new();
    for statement in pub_use_statements(lib) {
        let module: String = statement
            .trim_start_matches("pub use ")
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        for name in exported_names(&statement) {
            if name != module && name != "pub" && name != "use" {
                from.entry(name).or_insert_with(|| module.clone());
            }
        }
    }
    from
}

/// The modules each top-level module of `src/` imports (its tests and `testing` aside).
fn module_imports(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_modules(root);
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let reexported = root_reexport_modules(&lib);
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for module in modules.iter().filter(|m| *m != "testing") {
        let dir = root.join("src").join(module);
        let files = if dir.is_dir() {
            rust_files(&dir)
        } else {
            vec![root.join("src").join(format!("{module}.rs"))]
        };
        let entry = imports.entry(module.clone()).or_default();
        for file in files.into_iter().filter(|file| !is_tests_module(file)) {
            let source = fs::read_to_string(&file).expect("read a source file");
            for named in crate_modules(&source, &modules, &reexported) {
                if named != *module && named != "testing" {
                    entry.insert(named);
                }
            }
        }
    }
    imports
}

/// The import cycles among `imports`' modules: each one's modules, in the order they import
/// each other.
fn cycles(imports: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // A module on a cycle reaches itself; each cycle is reported once, from its least module.
    let mut found: Vec<Vec<String>> = Vec::new();
    for start in imports.keys() {
        let mut paths = vec![vec![start.clone()]];
        let mut seen = BTreeSet::new();
        while let Some(path) = paths.pop() {
            let last = path.last().expect("a path is never empty");
            for next in imports.get(last).into_iter().flatten() {
                if next == start {
                    if path.iter().all(|m| m >= start) {
                        found.push(path.clone());
                    }
                } else if next > start && seen.insert(next.clone()) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    paths.push(longer);
                }
            }
        }
    }
    found
}

#[test]
fn the_modules_of_src_import_each_other_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let imports = module_imports(root);
    assert!(imports.len() >= 20, "the modules of src/ were not found");
    let found: Vec<String> = cycles(&imports)
        .iter()
        .map(|cycle| format!("{} -> {}", cycle.join(" -> "), cycle[0]))
        .collect();
    assert!(
        found.is_empty(),
        "modules of src/ import each other in a cycle:\n  {}",
        found.join("\n  ")
    );
}

/// The module path of a file of `src/` (`src/store/open.rs` is `store::open`, a `mod.rs` its
/// folder's module).
fn module_path(file: &Path, src: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        path.pop();
    }
    path
}

/// Every path `code` names from `crate::`, `super::` or `self::`, as a module path from the
/// crate root (each part of a `{…}` group one path; nested groups are not followed).
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = code.split("#[cfg(test)]").next().unwrap_or(code);
    // `super` of `store/open.rs` (module `store::open`) and of `store/mod.rs` (module
    // `store`) is the module above each.
    let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
    let mut paths = Vec::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or("");
        for (at, _) in line.match_indices("::") {
            let before: String = line[..at]
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
                .chars()
                .rev()
                .collect();
            let base = match before.as_str() {
                "crate" => Vec::new(),
                "super" => parent.clone(),
                "self" => module.to_vec(),
                _ => continue,
            };
            if line[..at].ends_with("::super") || line[..at].ends_with("::self") {
                continue;
            }
            let rest = &line[at + 2..];
            let group = rest.strip_prefix('{');
            let parts: Vec<&str> = match group {
                Some(inner) => inner.split('}').next().unwrap_or("").split(',').collect(),
                None => vec![rest],
            };
            for part in parts {
                let mut path = base.clone();
                path.extend(
                    part.trim()
                        .split("::")
                        .map(|w| {
                            w.chars()
                                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                                .collect::<String>()
                        })
                        .take_while(|w| !w.is_empty()),
                );
                paths.push(path);
            }
        }
    }
    paths
}

/// Each file of `src/` (`testing` aside) and the files of `src/` it imports from.
fn file_imports(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let src = root.join("src");
    let files: Vec<PathBuf> = rust_files(&src)
        .into_iter()
        .filter(|f| !f.starts_with(src.join("testing")) && !is_tests_module(f))
        .collect();
    let by_module: HashMap<Vec<String>, String> = files
        .iter()
        .map(|f| {
            let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
            (module_path(f, &src), shown)
        })
        .collect();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("read src/lib.rs");
    let reexported = root_reexport_modules(&lib);
    let mut imports = BTreeMap::new();
    for file in &files {
        let module = module_path(file, &src);
        let shown = by_module[&module].clone();
        let source = fs::read_to_string(file).expect("read a source file");
        let mut named = BTreeSet::new();
        for mut path in named_paths(&source, &module) {
            // A name the root re-exports (`crate::Store`) is its module's.
            if let [name] = path.as_slice()
                && let Some(from) = reexported.get(name)
            {
                path.insert(0, from.clone());
            }
            // The longest prefix of the path that is a file's module is the file it names.
            if let Some(target) = (1..=path.len())
                .rev()
                .find_map(|len| by_module.get(&path[..len]))
                && *target != shown
            {
                named.insert(target.clone());
            }
        }
        imports.insert(shown, named);
    }
    imports
}

#[test]
fn the_files_of_src_import_each_other_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let imports = file_imports(root);
    assert!(imports.len() >= 100, "the files of src/ were not found");
    assert!(
        imports["src/store/open.rs"].contains("src/log/mod.rs"),
        "imports are not read: {:?}",
        imports["src/store/open.rs"]
    );
    let found: Vec<String> = cycles(&imports)
        .iter()
        .map(|cycle| format!("{} -> {}", cycle.join(" -> "), cycle[0]))
        .collect();
    assert!(
        found.is_empty(),
        "files of src/ import each other in a cycle (ARCHITECTURE.md):\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn a_cycle_between_modules_is_reported() {
    let graph = |edges: &[(&str, &str)]| {
        let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            imports
                .entry((*from).to_owned())
                .or_default()
                .insert((*to).to_owned());
            imports.entry((*to).to_owned()).or_default();
        }
        imports
    };
    assert!(cycles(&graph(&[("store", "log"), ("log", "hash")])).is_empty());
    assert_eq!(
        cycles(&graph(&[
            ("log", "error"),
            ("error", "store"),
            ("store", "log")
        ])),
        [["error", "store", "log"]]
    );
    let module = ["store".to_owned(), "open".to_owned()];
    assert_eq!(
        named_paths(
            "use super::{sharing::Holder, Store};\nuse crate::log::read::Snapshot;\n",
            &module
        ),
        [
            vec!["store", "sharing", "Holder"],
            vec!["store", "Store"],
            vec!["log", "read", "Snapshot"]
        ]
    );
    let lib = "pub use store::{Store, StoreError};\npub use error::{\n    Error, Result,\n};\n";
    let reexported = root_reexport_modules(lib);
    let modules: Vec<String> = ["log", "store", "error"].map(str::to_owned).to_vec();
    assert_eq!(
        crate_modules(
            "fn f() -> crate::Result<crate::Store> {}",
            &modules,
            &reexported
        ),
        ["error", "store"]
    );
}

/// The breaks of the layer rules under `root`: `file imports module`.
fn layer_breaks(doc: &str, root: &Path) -> Vec<String> {
    let modules = top_modules(root);
    let lib = fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let reexported = root_reexport_modules(&lib);
    let mut breaks = Vec::new();
    for layer in layers(doc, &modules) {
        let Some(allowed) = &layer.imports else {
            continue;
        };
        let own = layer_modules(&layer);
        for path in &layer.code {
            let full = root.join(path);
            let files = if full.is_dir() {
                rust_files(&full)
            } else {
                vec![full]
            };
            for file in files.into_iter().filter(|file| !is_tests_module(file)) {
                let source = fs::read_to_string(&file).expect("read a source file");
                for module in crate_modules(&source, &modules, &reexported) {
                    if !allowed.contains(&module) && !own.contains(&module) {
                        let shown = file.strip_prefix(root).unwrap_or(&file).display();
                        breaks.push(format!("{} ({shown}) imports `{module}`", layer.name));
                    }
                }
            }
        }
    }
    breaks
}

#[test]
fn every_layer_imports_only_what_its_row_of_the_layer_table_allows() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(root.join("ARCHITECTURE.md")).expect("read ARCHITECTURE.md");
    let modules = top_modules(root);
    assert!(
        layers(&doc, &modules).len() >= 15,
        "the layer table was not found"
    );
    let breaks = layer_breaks(&doc, root);
    assert!(
        breaks.is_empty(),
        "code reaches outside its layer (ARCHITECTURE.md's layer table):\n  {}",
        breaks.join("\n  ")
    );
}

#[test]
fn a_layer_that_reaches_outside_its_row_is_reported() {
    let modules: Vec<String> = ["log", "store", "projection", "hash"]
        .map(str::to_owned)
        .to_vec();
    let source = "use crate::hash::Digest;\nuse crate::{projection::X, store};\n\
                  // crate::store in a comment\nfn f() { crate::store::Store::open(); }\n\
                  #[cfg(test)]\nmod tests { use crate::log; }\n";
    assert_eq!(
        crate_modules(source, &modules, &HashMap::new()),
        ["hash", "projection", "store"]
    );
}

/// What names redb's tables, their rows or their transaction-level table calls: only the
/// storage layer may (`src/storage/`, the one seam the overlay lives in).
const REDB_TABLE_WORDS: &[&str] = &[
    "TableDefinition",
    "ReadableTable",
    "ReadOnlyTable",
    "ReadOnlyUntypedTable",
    "TableHandle",
    "AccessGuard",
    "TableStats",
    "redb::Table",
    "redb::Range",
    "open_table(",
    "open_untyped_table(",
    "list_tables(",
    "delete_table(",
    "rename_table(",
];

/// The lines of `source` (its tests aside) that name one of redb's table types or calls.
fn redb_table_uses(source: &str) -> Vec<String> {
    let code = match source.find("#[cfg(test)]\nmod tests") {
        Some(at) => &source[..at],
        None => source,
    };
    code.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .filter(|line| {
            REDB_TABLE_WORDS.iter().any(|word| match *word {
                // `TableStats` is the seam's own name too: only redb's is counted.
                "TableStats" => names(line, "redb::TableStats"),
                word => names(line, word),
            })
        })
        .map(|line| line.trim().to_owned())
        .collect()
}

/// Whether `line` holds `word` as a whole name: `redb::Table` is not `redb::TableError`.
fn names(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(at, _)| {
        word.ends_with('(')
            || !line[at + word.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[test]
fn only_the_storage_layer_names_redbs_table_types() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in rust_files(&root.join("src")) {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        // The storage layer is the seam; the testing support damages files beneath it.
        if shown.starts_with("src/storage/") || shown.starts_with("src/testing/") {
            continue;
        }
        let source = fs::read_to_string(&file).expect("read a source file");
        for line in redb_table_uses(&source) {
            found.push(format!("{shown}: {line}"));
        }
    }
    assert!(
        found.is_empty(),
        "code outside src/storage/ reaches redb's tables directly:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn a_use_of_redbs_tables_outside_the_seam_is_reported() {
    let source = "use redb::{ReadableTable, WriteTransaction};\n\
                  // txn.open_table(META) in a comment\n\
                  let t = txn.open_table(META)?;\n\
                  let s: crate::storage::TableStats = stats;\n\
                  let r: redb::Range<'_, u64, &[u8]> = x;\n\
                  Storage(#[from] redb::TableError),\n\
                  #[cfg(test)]\nmod tests { use redb::TableDefinition; }\n";
    assert_eq!(
        redb_table_uses(source),
        [
            "use redb::{ReadableTable, WriteTransaction};",
            "let t = txn.open_table(META)?;",
            "let r: redb::Range<'_, u64, &[u8]> = x;",
        ]
    );
}
