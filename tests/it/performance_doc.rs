//! `docs/performance.md`'s ratios table is the committed baseline's: the bench writes it
//! (`cargo bench --bench side_by_side -- --docs`, and every `--write-baseline`), and this test
//! renders it again from `benches/baseline.json` with the bench's own code.

#[path = "../../benches/side_by_side/doc_table.rs"]
#[allow(dead_code)] // The bench's writers are not the test's.
mod doc_table;

const DOC: &str = include_str!("../../docs/performance.md");
const BASELINE: &str = include_str!("../../benches/baseline.json");

#[test]
fn the_performance_doc_shows_the_committed_baselines_ratios() {
    let baseline: serde_json::Value = serde_json::from_str(BASELINE).expect("baseline is JSON");
    let ratios = baseline["ratios"]
        .as_object()
        .expect("the baseline has ratios");
    assert!(
        ratios.len() >= 20,
        "the baseline holds {} ratios",
        ratios.len()
    );
    let shown = doc_table::current(DOC).expect("docs/performance.md has the generated table");
    assert_eq!(
        shown,
        doc_table::render(&baseline),
        "docs/performance.md's ratios table differs from benches/baseline.json's: run \
         `cargo bench --bench side_by_side -- --docs`"
    );
    for key in ratios.keys() {
        assert!(
            shown.contains(&format!("| `{key}` |")),
            "{key} is not in the table"
        );
    }
}

#[test]
fn a_table_edited_by_hand_is_told_apart() {
    let baseline: serde_json::Value = serde_json::from_str(BASELINE).expect("baseline is JSON");
    let table = doc_table::render(&baseline);
    let doc = doc_table::splice(
        &format!("# P\n\n{}\n{}\n", doc_table::BEGIN, doc_table::END),
        &table,
    )
    .expect("the markers are there");
    assert_eq!(doc_table::current(&doc), Some(table.as_str()));
    let edited = doc.replacen("| yes |", "| no |", 1);
    assert_ne!(doc_table::current(&edited), Some(table.as_str()));
    assert_eq!(doc_table::utc(1_764_643_680), "2025-12-02 02:48 UTC");
}
