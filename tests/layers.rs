//! The architecture's invariant that the bindings live in one place: no module
//! of the engine outside `src/wasm/` names the JavaScript bindings or calls into
//! them, so the engine builds as a plain Rust dependency and on WASI.

use std::path::Path;

/// What only the bindings may name.
const BINDINGS: &[&str] = &["wasm_bindgen", "js_sys", "serde_wasm_bindgen", "getrandom", "crate::wasm", "web_sys"];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_bindings_name_the_bindings() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 5, "found the sources: {files:?}");
    let mut offences = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src/").to_string_lossy().replace('\\', "/");
        if rel.starts_with("wasm/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            // Unit tests may run in wasm through the test harness.
            if line.contains("wasm_bindgen_test") {
                continue;
            }
            for name in BINDINGS {
                if line.contains(name) {
                    offences.push(format!("src/{rel}:{}: names `{name}`: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(offences.is_empty(), "the engine names the bindings outside src/wasm/:\n{}", offences.join("\n"));
}
