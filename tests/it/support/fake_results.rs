//! An in-process fake of the Actions results service (Twirp) and of the Azure-like blob store its signed
//! URLs point at, served on loopback. Stateful and strict: an unexpected request is answered 500 and
//! recorded, and `assert_clean` fails the test naming it.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default)]
pub struct Artifact {
    pub name: String,
    pub key: String,
    pub expires_at: Option<String>,
    pub finalized: bool,
    pub size: Option<u64>,
    pub hash: Option<String>,
    pub expired: bool,
}

#[derive(Debug, Default)]
pub struct Fake {
    pub token: String,
    pub artifacts: Vec<Artifact>,
    pub blocks: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    pub blobs: BTreeMap<String, Vec<u8>>,
    pub block_puts: usize,
    /// Answer 500 to the block upload with this index (counting every attempt), once.
    pub fail_block: Option<usize>,
    pub unexpected: Vec<String>,
    pub auth_to_blob: usize,
    pub port: u16,
}

pub type Shared = Arc<Mutex<Fake>>;

pub struct Server {
    pub state: Shared,
    pub url: String,
    _runtime: tokio::runtime::Runtime,
}

impl Server {
    pub fn start(token: &str) -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let state: Shared = Arc::new(Mutex::new(Fake {
            token: token.to_string(),
            ..Fake::default()
        }));
        let app = Router::new()
            .route(
                "/twirp/github.actions.results.api.v1.ArtifactService/{method}",
                post(twirp),
            )
            .route("/blob/{key}", any(blob))
            .fallback(unexpected)
            // Azure takes blocks of up to 4000 MiB; the client sends 8 MiB.
            .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
            .with_state(state.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        state.lock().expect("lock").port = port;
        runtime.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Server {
            state,
            url: format!("http://127.0.0.1:{port}"),
            _runtime: runtime,
        }
    }

    pub fn assert_clean(&self) {
        let state = self.state.lock().expect("lock");
        assert!(
            state.unexpected.is_empty(),
            "the fake results service got unexpected requests: {:?}",
            state.unexpected
        );
        assert_eq!(
            state.auth_to_blob, 0,
            "a GitHub Authorization header reached the blob store"
        );
    }
}

/// Every test that starts the fake is checked when it ends: an unexpected request fails it, naming the
/// request — also when the test forgot to call `assert_clean` (not while it is failing already).
impl Drop for Server {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.assert_clean();
        }
    }
}

async fn unexpected(State(state): State<Shared>, request: axum::extract::Request) -> Response {
    let line = format!("{} {}", request.method(), request.uri());
    state.lock().expect("lock").unexpected.push(line.clone());
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("unexpected request: {line}"),
    )
        .into_response()
}

fn text(status: StatusCode, message: &str) -> Response {
    (status, json!({"code": "error", "msg": message}).to_string()).into_response()
}

async fn twirp(
    State(state): State<Shared>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut fake = state.lock().expect("lock");
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    if bearer != format!("Bearer {}", fake.token) {
        return text(StatusCode::UNAUTHORIZED, "bad token");
    }
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return text(StatusCode::BAD_REQUEST, "not json");
    };
    let name = request["name"]
        .as_str()
        .or(request["name_filter"].as_str())
        .unwrap_or_default()
        .to_string();
    let port = fake.port;
    // The signed URLs point at another host name than the service's own, as GitHub's do.
    let blob_url = |key: &str| format!("http://localhost:{port}/blob/{key}?sv=2023&sig=fake");
    match method.as_str() {
        "CreateArtifact" => {
            // Version 4 (upload-artifact v4–v6), or 7 with a mime type (the client 6.x).
            let version_ok = request["version"] == json!(4)
                || (request["version"] == json!(7) && request["mime_type"].is_string());
            if !version_ok {
                return text(
                    StatusCode::BAD_REQUEST,
                    "version must be 4, or 7 with mime_type",
                );
            }
            if fake.artifacts.iter().any(|a| a.name == name) {
                return text(
                    StatusCode::CONFLICT,
                    "an artifact with this name already exists on the workflow run",
                );
            }
            let key = format!("blob{}", fake.artifacts.len() + 1);
            fake.artifacts.push(Artifact {
                name,
                key: key.clone(),
                expires_at: request["expires_at"].as_str().map(str::to_string),
                ..Artifact::default()
            });
            (
                StatusCode::OK,
                json!({"ok": true, "signed_upload_url": blob_url(&key)}).to_string(),
            )
                .into_response()
        }
        "FinalizeArtifact" => {
            let size: u64 = request["size"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX);
            let hash = request["hash"].as_str().unwrap_or_default().to_string();
            let Some(index) = fake.artifacts.iter().position(|a| a.name == name) else {
                return text(StatusCode::NOT_FOUND, "no such artifact");
            };
            let key = fake.artifacts[index].key.clone();
            let Some(blob) = fake.blobs.get(&key) else {
                return text(StatusCode::BAD_REQUEST, "the blob was never committed");
            };
            let actual = format!("sha256:{}", aayudha::hash::bytes(blob));
            if blob.len() as u64 != size || actual != hash {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "size or hash mismatch: {size} {hash} vs {} {actual}",
                        blob.len()
                    ),
                );
            }
            let artifact = &mut fake.artifacts[index];
            artifact.finalized = true;
            artifact.size = Some(size);
            artifact.hash = Some(hash);
            (
                StatusCode::OK,
                json!({"ok": true, "artifact_id": (index + 1000).to_string()}).to_string(),
            )
                .into_response()
        }
        "ListArtifacts" => {
            let items: Vec<Value> = fake
                .artifacts
                .iter()
                .enumerate()
                .filter(|(_, a)| a.finalized && (name.is_empty() || a.name == name))
                .map(|(i, a)| json!({"database_id": (i + 1000).to_string(), "name": a.name, "size": a.size.unwrap_or(0).to_string(), "created_at": "2026-11-29T10:00:00Z", "digest": a.hash}))
                .collect();
            (StatusCode::OK, json!({"artifacts": items}).to_string()).into_response()
        }
        "GetSignedArtifactURL" => match fake
            .artifacts
            .iter()
            .find(|a| a.finalized && a.name == name)
        {
            Some(a) => (
                StatusCode::OK,
                json!({"signed_url": blob_url(&a.key)}).to_string(),
            )
                .into_response(),
            None => text(StatusCode::NOT_FOUND, "no such artifact"),
        },
        other => {
            fake.unexpected.push(format!("Twirp {other}"));
            text(StatusCode::NOT_FOUND, "no such method")
        }
    }
}

// The blob store the signed URLs point at.
mod blob;

use blob::blob;
