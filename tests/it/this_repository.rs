//! aayu's own repository: the bundled notes example's map is in sync with its source.

use crate::common::{aayu_in, run};

#[test]
fn verify_map_reports_no_drift_on_this_repository() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join(".git").exists() {
        // A source tarball without history cannot be checked; a clone always can.
        return;
    }
    let out = run(aayu_in(root).args(["verify", "--map", "--json"]));
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["drift"], serde_json::json!([]));
    assert_eq!(report["errors"], serde_json::json!([]));
    assert!(report["maps"].as_u64() >= Some(1));
    assert!(report["features"].as_u64() >= Some(4));
}
