//! The TypeScript declarations list exactly the engine's codes: `ErrorCode` in
//! pkg/src/index.d.ts is `Code::ALL`, and `FindingCode` is `analyze::CODES`.
//! (tsc, in scripts/test.sh, then checks that the declarations hold together.)

/// The string literals of `export type NAME = | "a" | "b" ...;` in index.d.ts.
fn union(name: &str) -> Vec<String> {
    let dts = include_str!("../pkg/src/index.d.ts");
    let start = dts.find(&format!("export type {name} =")).unwrap_or_else(|| panic!("no `export type {name}` in pkg/src/index.d.ts"));
    let body = &dts[start..start + dts[start..].find(';').unwrap()];
    let mut codes: Vec<String> = body
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .flat_map(|l| l.split('"').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
        .collect();
    codes.sort();
    codes
}

#[test]
fn error_code_type_lists_every_engine_code() {
    let mut engine: Vec<String> = idem::Code::ALL.iter().map(|c| c.as_str().to_string()).collect();
    engine.sort();
    assert_eq!(union("ErrorCode"), engine, "update `ErrorCode` in pkg/src/index.d.ts to match src/engine/error.rs");
}

#[cfg(feature = "analysis")]
#[test]
fn finding_code_type_lists_every_analysis_code() {
    let mut engine: Vec<String> = idem::analyze::CODES.iter().map(|(c, _, _)| c.to_string()).collect();
    engine.sort();
    assert_eq!(union("FindingCode"), engine, "update `FindingCode` in pkg/src/index.d.ts to match src/analysis/analyze/findings.rs");
}
