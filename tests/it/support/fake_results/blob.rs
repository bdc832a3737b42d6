//! The fake blob store behind the results service's signed URLs (Azure-like: block uploads, a block list
//! that commits them, a plain GET), reached without GitHub's Authorization header.

use super::*;

pub(super) async fn blob(
    State(state): State<Shared>,
    Path(key): Path<String>,
    Query(query): Query<BTreeMap<String, String>>,
    method: axum::http::Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    if headers.contains_key("authorization") {
        fake.auth_to_blob += 1;
    }
    if query.get("sig").map(String::as_str) != Some("fake") {
        return (StatusCode::FORBIDDEN, "no signature").into_response();
    }
    match (method.as_str(), query.get("comp").map(String::as_str)) {
        ("PUT", Some("block")) => {
            let index = fake.block_puts;
            fake.block_puts += 1;
            if fake.fail_block == Some(index) {
                fake.fail_block = None;
                return (StatusCode::INTERNAL_SERVER_ERROR, "transient").into_response();
            }
            let Some(id) = query.get("blockid") else {
                return (StatusCode::BAD_REQUEST, "no blockid").into_response();
            };
            fake.blocks
                .entry(key)
                .or_default()
                .insert(id.clone(), body.to_vec());
            StatusCode::CREATED.into_response()
        }
        ("PUT", Some("blocklist")) => {
            if headers
                .get("x-ms-blob-content-type")
                .and_then(|v| v.to_str().ok())
                != Some("application/zip")
            {
                return (StatusCode::BAD_REQUEST, "content type").into_response();
            }
            let xml = String::from_utf8_lossy(&body).into_owned();
            let ids: Vec<String> = xml
                .split("<Latest>")
                .skip(1)
                .filter_map(|s| s.split("</Latest>").next())
                .map(str::to_string)
                .collect();
            let stored = fake.blocks.get(&key).cloned().unwrap_or_default();
            let mut blob = Vec::new();
            for id in &ids {
                match stored.get(id) {
                    Some(bytes) => blob.extend_from_slice(bytes),
                    None => {
                        return (StatusCode::BAD_REQUEST, format!("unknown block {id}"))
                            .into_response();
                    }
                }
            }
            fake.blobs.insert(key, blob);
            StatusCode::CREATED.into_response()
        }
        ("GET", None) => {
            if fake.artifacts.iter().any(|a| a.key == key && a.expired) {
                return (StatusCode::GONE, "expired").into_response();
            }
            // Azure serves a blob with the content type its block list was committed with.
            match fake.blobs.get(&key) {
                Some(bytes) => (
                    StatusCode::OK,
                    [("content-type", "application/zip")],
                    bytes.clone(),
                )
                    .into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        }
        (m, c) => {
            fake.unexpected.push(format!("{m} /blob/{key} comp={c:?}"));
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
