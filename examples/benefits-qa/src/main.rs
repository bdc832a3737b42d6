//! benefits-qa: the web app. `benefits-qa [--listen 127.0.0.1:8080]` serves the pages and the JSON API on
//! a loopback address only.

use std::net::SocketAddr;

use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use benefits_qa::answer::{self, PLANS, Plan, Reply};
use benefits_qa::page;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Asked {
    #[serde(default)]
    q: String,
    #[serde(default)]
    plan: Option<String>,
}

#[derive(Deserialize)]
struct ApiQuestion {
    question: String,
    #[serde(default)]
    plan: Option<String>,
}

#[derive(Deserialize)]
struct PlanQuery {
    #[serde(default)]
    plan: Option<String>,
}

/// The plan a request names (the Standard plan when it names none); an unknown one is a 400 with the
/// known ones.
fn plan_of(id: Option<&str>) -> Result<&'static Plan, (StatusCode, Json<serde_json::Value>)> {
    let id = id.unwrap_or("standard");
    answer::plan(id).ok_or_else(|| {
        let known: Vec<&str> = PLANS.iter().map(|p| p.id).collect();
        (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("unknown plan `{id}`"), "plans": known})),
        )
    })
}

async fn home(Query(query): Query<PlanQuery>) -> Response {
    match plan_of(query.plan.as_deref()) {
        Ok(plan) => Html(page::home(plan)).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn ask_page(Query(asked): Query<Asked>) -> Response {
    match plan_of(asked.plan.as_deref()) {
        Ok(plan) => {
            let reply = answer::answer(plan, &asked.q);
            Html(page::reply(&asked.q, plan, &reply)).into_response()
        }
        Err(refused) => refused.into_response(),
    }
}

async fn plans_page(Query(query): Query<PlanQuery>) -> Response {
    match plan_of(query.plan.as_deref()) {
        Ok(plan) => Html(page::passages(plan)).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn api_ask(Json(asked): Json<ApiQuestion>) -> Response {
    let plan = match plan_of(asked.plan.as_deref()) {
        Ok(plan) => plan,
        Err(refused) => return refused.into_response(),
    };
    let reply = answer::answer(plan, &asked.question);
    let status = match reply {
        Reply::Refused { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        Reply::NotFound { .. } => StatusCode::NOT_FOUND,
        Reply::Answer { .. } => StatusCode::OK,
    };
    (status, Json(reply)).into_response()
}

async fn api_passages(Query(query): Query<PlanQuery>) -> Response {
    match plan_of(query.plan.as_deref()) {
        Ok(plan) => Json(json!({"plan": plan.name, "passages": plan.passages})).into_response(),
        Err(refused) => refused.into_response(),
    }
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({"ok": true}))
}

fn app() -> Router {
    Router::new()
        .route("/", get(home))
        .route("/ask", get(ask_page))
        .route("/plans", get(plans_page))
        .route("/api/ask", post(api_ask))
        .route("/api/passages", get(api_passages))
        .route("/api/health", get(health))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut listen = "127.0.0.1:8080".to_string();
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--listen", Some(addr)) => listen = addr,
            _ => {
                eprintln!("usage: benefits-qa [--listen 127.0.0.1:8080]");
                std::process::exit(2);
            }
        }
    }
    let addr: SocketAddr = match listen.parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("benefits-qa: `{listen}` is not an address: {e}");
            std::process::exit(2);
        }
    };
    if !addr.ip().is_loopback() {
        eprintln!("benefits-qa: listens on loopback only; `{addr}` is not a loopback address");
        std::process::exit(2);
    }
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("benefits-qa: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    };
    eprintln!("benefits-qa: listening on http://{addr}");
    if let Err(e) = axum::serve(listener, app()).await {
        eprintln!("benefits-qa: {e}");
        std::process::exit(1);
    }
}
