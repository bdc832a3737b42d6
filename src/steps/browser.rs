//! The browser steps of the built-in step runner (SPEC §2 "Browser steps"): Chromium, headless, driven
//! through the DevTools protocol with `chromiumoxide`.
//!
//! Elements are found as a person finds them: by accessible name (and role), by a form control's label —
//! both from Chromium's own accessibility tree, so the name is the one a screen reader hears — or by test
//! id (`data-testid`), optionally inside a region or landmark named by `within`. Every step waits for what
//! it needs (an element, a path) up to its limit, as a person waits for a page.
//!
//! The browser is started at the first browser step, with a profile folder of its own under the check's
//! `TMPDIR`, and stopped when the check ends. Chromium's own sandbox stays on unless the kernel denies it
//! (user namespaces closed, as in Docker's default seccomp profile) or the runner is root; then it runs
//! with `--no-sandbox` and the check's reason says why.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::accessibility::QueryAxTreeParams;
use chromiumoxide::cdp::browser_protocol::dom::{
    BackendNodeId, DescribeNodeParams, FocusParams, GetContentQuadsParams, GetDocumentParams,
    PushNodesByBackendIdsToFrontendParams, QuerySelectorAllParams, ResolveNodeParams,
    ScrollIntoViewIfNeededParams,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::cdp::js_protocol::runtime::{CallArgument, CallFunctionOnParams};
use chromiumoxide::error::CdpError;
use chromiumoxide::page::{Page, ScreenshotParams};
use futures_util::StreamExt;
use serde_json::{Map, Value, json};

/// How long a step waits for its element or path when it names no limit.
pub const STEP_WAIT: Duration = Duration::from_secs(5);
/// How long one look for an element may take before it is tried again: a DevTools request sent while
/// the page navigates can go unanswered.
const LOOK: Duration = Duration::from_secs(2);
/// How long Chromium may take to start.
const LAUNCH_WAIT: Duration = Duration::from_secs(30);
/// The window every check sees, so screenshots of the same page compare.
const WINDOW: (u32, u32) = (1280, 800);

/// The roles of regions and landmarks a `within` names.
const REGIONS: [&str; 12] = [
    "region",
    "main",
    "navigation",
    "form",
    "search",
    "complementary",
    "banner",
    "contentinfo",
    "dialog",
    "alertdialog",
    "group",
    "article",
];
/// The roles of form controls a `label` names.
const CONTROLS: [&str; 11] = [
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "checkbox",
    "radio",
    "spinbutton",
    "slider",
    "switch",
    "TextField",
    "ComboBoxSelect",
];
/// Roles that are text inside an element, never the element a step means.
const TEXT_ROLES: [&str; 4] = ["StaticText", "InlineTextBox", "LineBreak", "RootWebArea"];

/// The browser steps and the keys each may carry beside its action.
const STEPS: [(&str, &[&str]); 9] = [
    ("open", &[]),
    ("fill", &["text"]),
    ("click", &[]),
    ("press", &[]),
    ("select", &["option"]),
    ("see", &["contains", "count"]),
    ("url", &[]),
    ("wait", &["ms"]),
    ("screenshot", &[]),
];
/// The keys of a handle object.
const HANDLE_KEYS: [&str; 5] = ["name", "role", "label", "test", "within"];

/// The browser actions, in the order the contract error names them.
pub fn actions() -> impl Iterator<Item = &'static str> {
    STEPS.iter().map(|(action, _)| *action)
}

/// Whether a step key is a browser action.
pub fn is_action(key: &str) -> bool {
    actions().any(|a| a == key)
}

/// A browser step, read.
#[derive(Debug, Clone)]
pub struct BrowserStep {
    pub action: &'static str,
    /// The action's value as written: the transcript and the reasons show it.
    pub value: Value,
    pub what: What,
}

/// What a browser step does.
#[derive(Debug, Clone)]
pub enum What {
    /// A path under `base_url`.
    Open(String),
    /// The path the page must reach.
    Url(String),
    /// A key, as Chromium names it.
    Press(String),
    /// A file name in the check's artifact folder.
    Screenshot(String),
    Click(Handle),
    Fill {
        handle: Handle,
        text: String,
    },
    Select {
        handle: Handle,
        option: String,
    },
    See {
        handle: Handle,
        contains: Option<String>,
        count: Option<u64>,
    },
    Wait {
        handle: Handle,
        ms: Option<u64>,
    },
}

/// Why a browser step breaks its contract; the text names the key.
#[derive(Debug, thiserror::Error)]
pub enum BrowserStepError {
    #[error("`{0}` is not a browser step")]
    NotABrowserStep(String),
    #[error(
        "unknown key `{key}` beside `{action}` (a `{action}` step takes {})",
        takes(action)
    )]
    UnknownKey { key: String, action: &'static str },
    #[error("`{key}` is {what}")]
    Type {
        key: &'static str,
        what: &'static str,
    },
    #[error("`{0}` is a path that starts with `/`")]
    Path(&'static str),
    #[error("`press` names a key such as `Enter`, `Tab`, `Escape` or `a`; `{0}` is not one")]
    Key(String),
    #[error(
        "`screenshot` is a file name ending in `.png` (letters, digits, `.`, `-`, `_`); `{0}` is not"
    )]
    ScreenshotName(String),
    #[error("`{action}` needs `{key}`")]
    Needs {
        action: &'static str,
        key: &'static str,
    },
    #[error(transparent)]
    Handle(#[from] HandleError),
}

/// Why a handle names no element.
#[derive(Debug, thiserror::Error)]
pub enum HandleError {
    #[error(
        "a handle is an object: `name` (and `role`), `label` or `test`, and optionally `within`"
    )]
    NotAnObject,
    #[error("unknown handle key `{key}` (a handle takes {})", HANDLE_KEYS.join(", "))]
    UnknownKey { key: String },
    #[error("handle `{0}` is a non-empty string")]
    NotAString(&'static str),
    #[error("handle `role` goes with `name` only")]
    RoleWithoutName,
    #[error("a handle names its element one way: exactly one of `name`, `label` or `test`")]
    NotOneWay,
}

/// What a browser step of `action` takes: the action and the keys beside it, for the contract error.
fn takes(action: &str) -> String {
    let extra = STEPS
        .iter()
        .find(|(a, _)| *a == action)
        .map_or(&[][..], |(_, extra)| *extra);
    std::iter::once(action)
        .chain(extra.iter().copied())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads one browser step against its contract: its keys and their types. The error names the key.
pub fn parse(action: &str, step: &Map<String, Value>) -> Result<BrowserStep, BrowserStepError> {
    let Some((action, extra)) = STEPS.iter().find(|(a, _)| *a == action).copied() else {
        return Err(BrowserStepError::NotABrowserStep(action.to_string()));
    };
    if let Some(unknown) = step
        .keys()
        .find(|k| k.as_str() != action && !extra.contains(&k.as_str()))
    {
        return Err(BrowserStepError::UnknownKey {
            key: unknown.clone(),
            action,
        });
    }
    let value = &step[action];
    for (key, check) in [
        ("text", Value::is_string as fn(&Value) -> bool),
        ("option", Value::is_string),
        ("contains", Value::is_string),
        ("count", Value::is_u64),
        ("ms", Value::is_u64),
    ] {
        if step.get(key).is_some_and(|v| !check(v)) {
            let what = if matches!(key, "count" | "ms") {
                "a whole number"
            } else {
                "a string"
            };
            return Err(BrowserStepError::Type { key, what });
        }
    }
    let text = |key: &str| step.get(key).and_then(Value::as_str).map(str::to_string);
    let number = |key: &str| step.get(key).and_then(Value::as_u64);
    let what = match action {
        "open" | "url" => {
            let Some(path) = value.as_str().filter(|p| p.starts_with('/')) else {
                return Err(BrowserStepError::Path(action));
            };
            if action == "open" {
                What::Open(path.to_string())
            } else {
                What::Url(path.to_string())
            }
        }
        "press" => {
            let key = value.as_str().unwrap_or_default();
            if chromiumoxide::keys::get_key_definition(key).is_none() {
                return Err(BrowserStepError::Key(key.to_string()));
            }
            What::Press(key.to_string())
        }
        "screenshot" => {
            let name = value.as_str().unwrap_or_default();
            let plain = !name.starts_with('.')
                && name.len() > 4
                && name.ends_with(".png")
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
            if !plain {
                return Err(BrowserStepError::ScreenshotName(name.to_string()));
            }
            What::Screenshot(name.to_string())
        }
        _ => {
            let handle = handle(value)?;
            let needs =
                |key: &'static str| text(key).ok_or(BrowserStepError::Needs { action, key });
            match action {
                "click" => What::Click(handle),
                "fill" => What::Fill {
                    handle,
                    text: needs("text")?,
                },
                "select" => What::Select {
                    handle,
                    option: needs("option")?,
                },
                "see" => What::See {
                    handle,
                    contains: text("contains"),
                    count: number("count"),
                },
                _ => What::Wait {
                    handle,
                    ms: number("ms"),
                },
            }
        }
    };
    Ok(BrowserStep {
        action,
        value: value.clone(),
        what,
    })
}

/// A handle: how a step names one element.
#[derive(Debug, Clone)]
pub struct Handle {
    by: By,
    role: Option<String>,
    within: Option<String>,
}

#[derive(Debug, Clone)]
enum By {
    Name(String),
    Label(String),
    Test(String),
}

/// Reads a handle object; the error names what is wrong with it.
pub fn handle(value: &Value) -> Result<Handle, HandleError> {
    let Some(object) = value.as_object() else {
        return Err(HandleError::NotAnObject);
    };
    if let Some(unknown) = object.keys().find(|k| !HANDLE_KEYS.contains(&k.as_str())) {
        return Err(HandleError::UnknownKey {
            key: unknown.clone(),
        });
    }
    let text = |key: &'static str| -> Result<Option<String>, HandleError> {
        match object.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(_) => Err(HandleError::NotAString(key)),
        }
    };
    let by: Vec<By> = [
        text("name")?.map(By::Name),
        text("label")?.map(By::Label),
        text("test")?.map(By::Test),
    ]
    .into_iter()
    .flatten()
    .collect();
    let role = text("role")?;
    let within = text("within")?;
    match <[By; 1]>::try_from(by) {
        Ok([by]) => {
            if role.is_some() && !matches!(by, By::Name(_)) {
                return Err(HandleError::RoleWithoutName);
            }
            Ok(Handle { by, role, within })
        }
        Err(_) => Err(HandleError::NotOneWay),
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.by {
            By::Name(name) => match &self.role {
                Some(role) => write!(f, "{role} named `{name}`")?,
                None => write!(f, "element named `{name}`")?,
            },
            By::Label(label) => write!(f, "control labelled `{label}`")?,
            By::Test(test) => write!(f, "element with test id `{test}`")?,
        }
        if let Some(within) = &self.within {
            write!(f, " within `{within}`")?;
        }
        Ok(())
    }
}

/// Where to find Chromium: `AAYU_CHROMIUM` (which aayu sets from `[verify] chromium`), else the first of
/// `chromium`, `chromium-browser`, `google-chrome` on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AAYU_CHROMIUM").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::split_paths(&path)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
}

/// One running browser with one page.
pub struct Session {
    runtime: tokio::runtime::Runtime,
    browser: Browser,
    page: Page,
    handler: tokio::task::JoinHandle<()>,
    base_url: String,
    /// Why Chromium's own sandbox is off, when it is.
    pub no_sandbox: Option<String>,
    _profile: tempfile::TempDir,
}

/// Why the browser could not be started, or a screenshot of a failed step taken. Each text carries its
/// cause's: it lands whole in the check's reason.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("cannot start the browser's event loop: {0}")]
    EventLoop(#[source] std::io::Error),
    #[error("cannot make Chromium's profile folder: {0}")]
    Profile(#[source] std::io::Error),
    /// chromiumoxide's configuration builder refused the configuration (it says why in words only).
    #[error("{0}")]
    Config(String),
    #[error(
        "Chromium at `{}` did not start: {source}{}",
        .chromium.display(),
        .sandboxed.as_ref().map(|f| format!("; with its own sandbox: {f}")).unwrap_or_default()
    )]
    DidNotStart {
        chromium: PathBuf,
        #[source]
        source: Box<CdpError>,
        /// Why it did not start with its own sandbox, the first time.
        sandboxed: Option<Box<CdpError>>,
    },
    #[error("{0}")]
    Screenshot(#[source] CdpError),
    #[error("{0}")]
    WriteScreenshot(#[source] std::io::Error),
}

/// Why a look at the page (a query, a function called on an element) failed.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("{0}")]
    Cdp(#[from] CdpError),
    #[error("the page did not answer (still loading?)")]
    NoAnswer,
    #[error("no region or landmark is named `{0}`")]
    NoRegion(String),
    #[error("the element has no object")]
    NoObject,
    /// chromiumoxide's parameter builder refused the call (it says why in words only).
    #[error("{0}")]
    Params(String),
    /// What the function threw in the page.
    #[error("{0}")]
    Thrown(String),
}

/// Why a browser step did not hold. Each text carries its cause's: it lands whole in the check's reason
/// and the transcript.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The page did not open: the app is not there (the check is unreachable, not failed).
    #[error("the page `{url}` did not open: {source}")]
    Open {
        url: String,
        #[source]
        source: CdpError,
    },
    #[error("the page is at `{now}`, not `{want}`, after {}", seconds(*.limit))]
    Path {
        now: String,
        want: String,
        limit: Duration,
    },
    /// A DevTools request of the step failed; `what` says which.
    #[error("{what}: {source}")]
    Cdp {
        what: &'static str,
        #[source]
        source: CdpError,
    },
    /// A function called on the element failed; `what` says which.
    #[error("{what}: {source}")]
    Page {
        what: &'static str,
        #[source]
        source: PageError,
    },
    #[error("the screenshot could not be written: {0}")]
    WriteScreenshot(#[source] std::io::Error),
    #[error("the {handle} has no option `{option}` (it has {})", options_of(.options))]
    NoOption {
        handle: Box<Handle>,
        option: String,
        options: Vec<String>,
    },
    #[error(
        "the {handle} does not contain `{want}` after {}; its text is {:?}",
        seconds(*.limit),
        clip(.text)
    )]
    Lacks {
        handle: Box<Handle>,
        want: String,
        text: String,
        limit: Duration,
    },
    #[error(
        "expected {count} visible × {handle}{}, saw {seen} after {}",
        .containing.as_ref().map(|w| format!(" containing `{w}`")).unwrap_or_default(),
        seconds(*.limit)
    )]
    Count {
        handle: Box<Handle>,
        containing: Option<String>,
        count: u64,
        seen: u64,
        limit: Duration,
    },
    #[error("the {handle}: {source} (on `{path}`)")]
    Look {
        handle: Box<Handle>,
        path: String,
        #[source]
        source: PageError,
    },
    #[error("found no {handle} on `{path}` after {}", seconds(*.limit))]
    NotFound {
        handle: Box<Handle>,
        path: String,
        limit: Duration,
    },
    #[error("the {handle} is on `{path}` but not visible after {}", seconds(*.limit))]
    Hidden {
        handle: Box<Handle>,
        path: String,
        limit: Duration,
    },
    #[error(
        "{count} elements match {handle} on `{path}`: name it more closely (a `role`, or `within`)"
    )]
    Ambiguous {
        handle: Box<Handle>,
        path: String,
        count: usize,
    },
    #[error("the {0} has no box to click")]
    NoBox(Box<Handle>),
    /// chromiumoxide's event builder refused the event (it says why in words only).
    #[error("{0}")]
    Event(String),
    #[error("`{0}` is not a key")]
    NotAKey(String),
}

type StepResult<T> = Result<T, StepError>;

/// A failed DevTools request of a step, named by `what`.
fn cdp(what: &'static str) -> impl FnOnce(CdpError) -> StepError {
    move |source| StepError::Cdp { what, source }
}

/// A failed function call on an element of a step, named by `what`.
fn page(what: &'static str) -> impl FnOnce(PageError) -> StepError {
    move |source| StepError::Page { what, source }
}

/// The options a select has, for [`StepError::NoOption`].
fn options_of(options: &[String]) -> String {
    if options.is_empty() {
        "none: is it a select?".to_string()
    } else {
        options
            .iter()
            .map(|o| format!("`{o}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Session {
    /// Starts Chromium at `chromium` for pages under `base_url`.
    pub fn start(chromium: &Path, base_url: &str) -> Result<Session, BrowserError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(BrowserError::EventLoop)?;
        let mut no_sandbox = sandbox_denied();
        let mut first_error = None;
        loop {
            let profile = tempfile::Builder::new()
                .prefix("aayu-chromium-")
                .tempdir()
                .map_err(BrowserError::Profile)?;
            let mut config = BrowserConfig::builder()
                .chrome_executable(chromium)
                .user_data_dir(profile.path())
                .new_headless_mode()
                .window_size(WINDOW.0, WINDOW.1)
                .viewport(None)
                .launch_timeout(LAUNCH_WAIT)
                .request_timeout(Duration::from_secs(30))
                .args([
                    "--disable-dev-shm-usage",
                    "--disable-gpu",
                    "--no-first-run",
                    "--disable-quic",
                    "--disable-component-update",
                    "--disable-sync",
                    "--lang=en-US",
                ]);
            if no_sandbox.is_some() {
                config = config.no_sandbox();
            }
            let config = config.build().map_err(BrowserError::Config)?;
            let launched = runtime.block_on(async {
                let (browser, mut handler) = Browser::launch(config).await?;
                let task = tokio::spawn(async move {
                    while let Some(event) = handler.next().await {
                        // A message Chromium sends that this version does not know is not an error.
                        let _ = event;
                    }
                });
                let page = browser.new_page("about:blank").await?;
                Ok::<_, CdpError>((browser, task, page))
            });
            match launched {
                Ok((browser, handler, page)) => {
                    return Ok(Session {
                        runtime,
                        browser,
                        page,
                        handler,
                        base_url: base_url.trim_end_matches('/').to_string(),
                        no_sandbox,
                        _profile: profile,
                    });
                }
                // Chromium's own sandbox can fail where the probe passed (an AppArmor profile that
                // allows the namespace but not what Chromium does in it): once more without it.
                Err(e) if no_sandbox.is_none() => {
                    no_sandbox = Some(format!("its own sandbox did not start ({e})"));
                    first_error = Some(Box::new(e));
                }
                Err(source) => {
                    return Err(BrowserError::DidNotStart {
                        chromium: chromium.to_path_buf(),
                        source: Box::new(source),
                        sandboxed: first_error,
                    });
                }
            }
        }
    }

    /// Closes the browser and waits for its processes — the browser's own, and its helpers (zygotes,
    /// renderers, the crash handler), which outlive it for a moment — so that none is left for aayu to
    /// kill when the check ends.
    pub fn stop(mut self) {
        self.runtime.block_on(async {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.close()).await;
            let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.wait()).await;
        });
        self.handler.abort();
        let deadline = Instant::now() + Duration::from_secs(3);
        while crate::sandbox::procs::others_in_my_session() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs one browser step; what it did, for the transcript.
    pub fn step(&mut self, step: &BrowserStep, out: &Path) -> StepResult<Value> {
        let page = self.page.clone();
        let base_url = self.base_url.clone();
        self.runtime.block_on(async move {
            let steps = Steps {
                page: &page,
                base_url: &base_url,
            };
            steps.run(&step.what, out).await
        })
    }

    /// A screenshot of the page as it is now, written to `path`.
    pub fn screenshot(&mut self, path: &Path) -> Result<(), BrowserError> {
        let page = self.page.clone();
        self.runtime.block_on(async move {
            let png = page
                .screenshot(
                    ScreenshotParams::builder()
                        .format(CaptureScreenshotFormat::Png)
                        .build(),
                )
                .await
                .map_err(BrowserError::Screenshot)?;
            crate::safe_fs::write_atomic(path, &png).map_err(BrowserError::WriteScreenshot)
        })
    }

    /// The page's URL now.
    pub fn current_url(&mut self) -> String {
        let page = self.page.clone();
        self.runtime
            .block_on(async move { page.url().await.ok().flatten().unwrap_or_default() })
    }
}

/// Whether Chromium's own sandbox cannot work here, and why: it needs a new user namespace, which runs
/// as root do not get (Chromium refuses root) and which Docker's default seccomp profile and some kernels
/// deny.
fn sandbox_denied() -> Option<String> {
    if nix::unistd::geteuid().is_root() {
        return Some("it runs as root, where Chromium refuses its own sandbox".to_string());
    }
    crate::sandbox::exec::user_namespace_denied()
        .map(|e| format!("the kernel denies the user namespace its own sandbox needs ({e})"))
}

struct Steps<'a> {
    page: &'a Page,
    base_url: &'a str,
}

impl Steps<'_> {
    async fn run(&self, what: &What, out: &Path) -> StepResult<Value> {
        match what {
            What::Open(path) => {
                let url = format!("{}{path}", self.base_url);
                self.page
                    .goto(url.as_str())
                    .await
                    .map_err(|source| StepError::Open {
                        url: url.clone(),
                        source,
                    })?;
                Ok(json!({"url": url}))
            }
            What::Url(want) => {
                let limit = STEP_WAIT;
                let deadline = Instant::now() + limit;
                loop {
                    let now = self.path().await;
                    if now == *want {
                        return Ok(json!({"path": now}));
                    }
                    if Instant::now() >= deadline {
                        return Err(StepError::Path {
                            now,
                            want: want.clone(),
                            limit,
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            What::Press(key) => {
                self.press(key).await?;
                self.settle().await;
                Ok(json!({"key": key}))
            }
            What::Screenshot(name) => {
                let png = self
                    .page
                    .screenshot(
                        ScreenshotParams::builder()
                            .format(CaptureScreenshotFormat::Png)
                            .build(),
                    )
                    .await
                    .map_err(cdp("the screenshot failed"))?;
                crate::safe_fs::write_atomic(&out.join(name), &png)
                    .map_err(StepError::WriteScreenshot)?;
                Ok(json!({"screenshot": name, "bytes": png.len()}))
            }
            What::See {
                handle,
                contains,
                count: Some(count),
            } => {
                self.see_count(handle, *count, contains.as_deref(), STEP_WAIT)
                    .await
            }
            What::Click(handle) => {
                let node = self.one_visible(handle, STEP_WAIT).await?;
                self.click(node, handle).await?;
                self.settle().await;
                Ok(json!({}))
            }
            What::Fill { handle, text } => {
                let node = self.one_visible(handle, STEP_WAIT).await?;
                self.fill(node, text).await?;
                Ok(json!({"text": text}))
            }
            What::Select { handle, option } => {
                let node = self.one_visible(handle, STEP_WAIT).await?;
                let result = self
                    .call(node, SELECT, vec![json!(option)])
                    .await
                    .map_err(page("the option could not be chosen"))?;
                if let Some(options) = result.as_array() {
                    return Err(StepError::NoOption {
                        handle: Box::new(handle.clone()),
                        option: option.clone(),
                        options: options
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                    });
                }
                Ok(json!({"option": option}))
            }
            What::See {
                handle,
                contains,
                count: None,
            } => {
                self.visible_with(handle, contains.as_deref(), STEP_WAIT)
                    .await
            }
            What::Wait { handle, ms } => {
                let limit = ms.map_or(STEP_WAIT, Duration::from_millis);
                self.visible_with(handle, None, limit).await
            }
        }
    }

    /// Waits for the one visible element `handle` names and, with `contains`, for that text in it.
    async fn visible_with(
        &self,
        handle: &Handle,
        contains: Option<&str>,
        limit: Duration,
    ) -> StepResult<Value> {
        let node = self.one_visible(handle, limit).await?;
        if let Some(want) = contains {
            let deadline = Instant::now() + limit;
            loop {
                let text = self.text(node).await;
                if text.contains(want) {
                    return Ok(json!({"text": clip(&text)}));
                }
                if Instant::now() >= deadline {
                    return Err(StepError::Lacks {
                        handle: Box::new(handle.clone()),
                        want: want.to_string(),
                        text,
                        limit,
                    });
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(json!({"visible": true}))
    }

    async fn see_count(
        &self,
        handle: &Handle,
        count: u64,
        want: Option<&str>,
        limit: Duration,
    ) -> StepResult<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let mut seen = 0u64;
            let found = tokio::time::timeout(LOOK, self.find(handle)).await;
            for node in found.ok().and_then(Result::ok).unwrap_or_default() {
                if !self.visible(node).await {
                    continue;
                }
                if let Some(want) = want
                    && !self.text(node).await.contains(want)
                {
                    continue;
                }
                seen += 1;
            }
            if seen == count {
                return Ok(json!({"count": seen}));
            }
            if Instant::now() >= deadline {
                return Err(StepError::Count {
                    handle: Box::new(handle.clone()),
                    containing: want.map(str::to_string),
                    count,
                    seen,
                    limit,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The one visible element `handle` names, waiting up to `limit` for it.
    async fn one_visible(&self, handle: &Handle, limit: Duration) -> StepResult<BackendNodeId> {
        let deadline = Instant::now() + limit;
        loop {
            let found = match tokio::time::timeout(LOOK, self.find(handle)).await {
                Ok(found) => found,
                Err(_) => Err(PageError::NoAnswer),
            };
            let mut visible = Vec::new();
            if let Ok(nodes) = &found {
                for &node in nodes {
                    if self.visible(node).await {
                        visible.push(node);
                    }
                }
            }
            if visible.len() == 1 {
                return Ok(visible[0]);
            }
            if Instant::now() >= deadline {
                let path = self.path().await;
                let handle = Box::new(handle.clone());
                return Err(match (found, visible.len()) {
                    (Err(source), _) => StepError::Look {
                        handle,
                        path,
                        source,
                    },
                    (Ok(nodes), 0) if nodes.is_empty() => StepError::NotFound {
                        handle,
                        path,
                        limit,
                    },
                    (Ok(_), 0) => StepError::Hidden {
                        handle,
                        path,
                        limit,
                    },
                    (Ok(_), count) => StepError::Ambiguous {
                        handle,
                        path,
                        count,
                    },
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Every element `handle` names now (visible or not); an error when its `within` names no region.
    async fn find(&self, handle: &Handle) -> Result<Vec<BackendNodeId>, PageError> {
        let document = self
            .page
            .execute(GetDocumentParams::builder().depth(0).build())
            .await?
            .result
            .root;
        let mut scope = document.backend_node_id;
        if let Some(within) = &handle.within {
            let regions = self
                .ax_query(scope, within, None)
                .await?
                .into_iter()
                .filter(|(role, _)| REGIONS.contains(&role.as_str()))
                .map(|(_, node)| node)
                .collect::<Vec<_>>();
            match regions.first() {
                Some(&region) => scope = region,
                None => return Err(PageError::NoRegion(within.clone())),
            }
        }
        match &handle.by {
            By::Name(name) => Ok(self
                .ax_query(scope, name, handle.role.as_deref())
                .await?
                .into_iter()
                .filter(|(role, _)| !TEXT_ROLES.contains(&role.as_str()))
                .map(|(_, node)| node)
                .collect()),
            By::Label(label) => Ok(self
                .ax_query(scope, label, None)
                .await?
                .into_iter()
                .filter(|(role, _)| CONTROLS.contains(&role.as_str()))
                .map(|(_, node)| node)
                .collect()),
            By::Test(test) => {
                let pushed = self
                    .page
                    .execute(PushNodesByBackendIdsToFrontendParams::new(vec![scope]))
                    .await?;
                let Some(&scope_id) = pushed.result.node_ids.first() else {
                    return Ok(Vec::new());
                };
                let selector = format!("[data-testid=\"{}\"]", css_string(test));
                let nodes = self
                    .page
                    .execute(QuerySelectorAllParams::new(scope_id, selector))
                    .await?
                    .result
                    .node_ids;
                let mut found = Vec::new();
                for node in nodes {
                    let described = self
                        .page
                        .execute(DescribeNodeParams::builder().node_id(node).build())
                        .await?;
                    found.push(described.result.node.backend_node_id);
                }
                Ok(found)
            }
        }
    }

    /// The nodes of the accessibility tree under `scope` with this name (and role): (role, node).
    async fn ax_query(
        &self,
        scope: BackendNodeId,
        name: &str,
        role: Option<&str>,
    ) -> Result<Vec<(String, BackendNodeId)>, PageError> {
        let mut query = QueryAxTreeParams::builder()
            .backend_node_id(scope)
            .accessible_name(name);
        if let Some(role) = role {
            query = query.role(role);
        }
        let nodes = self.page.execute(query.build()).await?.result.nodes;
        Ok(nodes
            .into_iter()
            .filter(|n| !n.ignored)
            .filter_map(|n| {
                let role = n
                    .role
                    .as_ref()
                    .and_then(|r| r.value.as_ref())
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                Some((role, n.backend_dom_node_id?))
            })
            .collect())
    }

    async fn call(
        &self,
        node: BackendNodeId,
        function: &str,
        args: Vec<Value>,
    ) -> Result<Value, PageError> {
        let object = self
            .page
            .execute(ResolveNodeParams::builder().backend_node_id(node).build())
            .await?
            .result
            .object
            .object_id
            .ok_or(PageError::NoObject)?;
        let mut call = CallFunctionOnParams::builder()
            .function_declaration(function)
            .object_id(object)
            .return_by_value(true)
            .await_promise(true);
        for arg in args {
            call = call.argument(CallArgument::builder().value(arg).build());
        }
        let returned = self
            .page
            .execute(call.build().map_err(PageError::Params)?)
            .await?
            .result;
        if let Some(thrown) = returned.exception_details {
            return Err(PageError::Thrown(thrown.text));
        }
        Ok(returned.result.value.unwrap_or(Value::Null))
    }

    async fn visible(&self, node: BackendNodeId) -> bool {
        tokio::time::timeout(LOOK, self.call(node, VISIBLE, Vec::new()))
            .await
            .is_ok_and(|v| v.is_ok_and(|v| v == Value::Bool(true)))
    }

    async fn text(&self, node: BackendNodeId) -> String {
        tokio::time::timeout(LOOK, self.call(node, TEXT, Vec::new()))
            .await
            .ok()
            .and_then(Result::ok)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Waits (up to [`STEP_WAIT`]) until the page has finished loading: after a step that may navigate
    /// (a click, a key, a choice), the next step looks at the page it led to.
    async fn settle(&self) {
        let deadline = Instant::now() + STEP_WAIT;
        // A navigation a click starts begins a moment later.
        tokio::time::sleep(Duration::from_millis(50)).await;
        while Instant::now() < deadline {
            let state = tokio::time::timeout(LOOK, self.page.evaluate("document.readyState")).await;
            if let Ok(Ok(state)) = state
                && state.value().and_then(Value::as_str) == Some("complete")
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The current path (and query), from the page's URL.
    async fn path(&self) -> String {
        let url = self.page.url().await.ok().flatten().unwrap_or_default();
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let path = rest.find('/').map_or("/", |at| &rest[at..]);
        path.split('#').next().unwrap_or(path).to_string()
    }

    /// A real click: scrolled into view, the mouse pressed and released at the element's centre, as a
    /// person clicks (an element covered by another is not clicked through).
    async fn click(&self, node: BackendNodeId, handle: &Handle) -> StepResult<()> {
        let _ = self
            .page
            .execute(
                ScrollIntoViewIfNeededParams::builder()
                    .backend_node_id(node)
                    .build(),
            )
            .await;
        let quads = self
            .page
            .execute(
                GetContentQuadsParams::builder()
                    .backend_node_id(node)
                    .build(),
            )
            .await
            .map_err(cdp("the element has no box to click"))?
            .result
            .quads;
        let Some(quad) = quads.first().map(|q| q.inner()) else {
            return Err(StepError::NoBox(Box::new(handle.clone())));
        };
        let (x, y) = if quad.len() >= 8 {
            (
                (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0,
                (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0,
            )
        } else {
            return Err(StepError::NoBox(Box::new(handle.clone())));
        };
        for kind in [
            DispatchMouseEventType::MouseMoved,
            DispatchMouseEventType::MousePressed,
            DispatchMouseEventType::MouseReleased,
        ] {
            let mut event = DispatchMouseEventParams::builder()
                .r#type(kind.clone())
                .x(x)
                .y(y);
            if kind != DispatchMouseEventType::MouseMoved {
                event = event.button(MouseButton::Left).click_count(1);
            }
            self.page
                .execute(event.build().map_err(StepError::Event)?)
                .await
                .map_err(cdp("the click failed"))?;
        }
        Ok(())
    }

    async fn fill(&self, node: BackendNodeId, text: &str) -> StepResult<()> {
        self.page
            .execute(FocusParams::builder().backend_node_id(node).build())
            .await
            .map_err(cdp("the control cannot take focus"))?;
        self.call(node, CLEAR, Vec::new())
            .await
            .map_err(page("the control cannot be cleared"))?;
        if !text.is_empty() {
            self.page
                .execute(InsertTextParams::new(text))
                .await
                .map_err(cdp("typing failed"))?;
        }
        Ok(())
    }

    async fn press(&self, key: &str) -> StepResult<()> {
        let Some(definition) = chromiumoxide::keys::get_key_definition(key) else {
            return Err(StepError::NotAKey(key.to_string()));
        };
        let text = definition
            .text
            .or((definition.key.len() == 1).then_some(definition.key));
        let mut down = DispatchKeyEventParams::builder()
            .key(definition.key)
            .code(definition.code)
            .windows_virtual_key_code(definition.key_code)
            .native_virtual_key_code(definition.key_code);
        let up = down.clone().r#type(DispatchKeyEventType::KeyUp);
        down = match text {
            Some(text) => down.r#type(DispatchKeyEventType::KeyDown).text(text),
            None => down.r#type(DispatchKeyEventType::RawKeyDown),
        };
        for event in [down, up] {
            self.page
                .execute(event.build().map_err(StepError::Event)?)
                .await
                .map_err(cdp("the key press failed"))?;
        }
        Ok(())
    }
}

/// Whether an element is rendered and visible: not hidden by CSS, and with a box.
const VISIBLE: &str = "function() { const r = this.getBoundingClientRect(); return this.checkVisibility({visibilityProperty: true, opacityProperty: true}) && r.width > 0 && r.height > 0; }";
/// The text a person reads in an element (a form control's value).
const TEXT: &str = "function() { if (this instanceof HTMLInputElement || this instanceof HTMLTextAreaElement) return this.value; return this.innerText || this.textContent || ''; }";
/// Empties a form control, as selecting its text and deleting it would.
const CLEAR: &str = "function() { if ('value' in this) { this.value = ''; this.dispatchEvent(new Event('input', {bubbles: true})); } else if (this.isContentEditable) { this.textContent = ''; } }";
/// Chooses a select's option by its label, text or value: null when chosen, else the options there are.
const SELECT: &str = "function(want) { if (!(this instanceof HTMLSelectElement)) return []; const options = Array.from(this.options); const o = options.find(o => o.label === want || o.text.trim() === want || o.value === want); if (!o) return options.map(o => o.text.trim()); this.value = o.value; this.dispatchEvent(new Event('input', {bubbles: true})); this.dispatchEvent(new Event('change', {bubbles: true})); return null; }";

/// A string inside a CSS double-quoted string.
fn css_string(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            '\n' => "\\a ".chars().collect(),
            c => vec![c],
        })
        .collect()
}

fn seconds(limit: Duration) -> String {
    let ms = limit.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

fn clip(text: &str) -> String {
    let short: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        format!("{short}…")
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("object")
    }

    #[test]
    fn handles_name_their_element_one_way() {
        assert!(handle(&json!({"name": "Ask", "role": "button"})).is_ok());
        assert!(handle(&json!({"label": "Question", "within": "Ask a question"})).is_ok());
        assert!(handle(&json!({"test": "answer"})).is_ok());
        let two = handle(&json!({"name": "Ask", "test": "ask"}))
            .expect_err("two ways")
            .to_string();
        assert!(two.contains("exactly one"), "{two}");
        let unknown = handle(&json!({"css": "#ask"}))
            .expect_err("unknown")
            .to_string();
        assert_eq!(
            unknown,
            "unknown handle key `css` (a handle takes name, role, label, test, within)"
        );
        let role = handle(&json!({"label": "Q", "role": "textbox"}))
            .expect_err("role")
            .to_string();
        assert!(role.contains("`role` goes with `name`"), "{role}");
    }

    #[test]
    fn browser_steps_are_checked_key_by_key() {
        let validate = |action: &str, step: &Map<String, Value>| {
            parse(action, step).map(drop).map_err(|e| e.to_string())
        };
        assert!(validate("open", &step(json!({"open": "/"}))).is_ok());
        assert!(validate("fill", &step(json!({"fill": {"label": "Q"}, "text": "x"}))).is_ok());
        assert!(validate("see", &step(json!({"see": {"test": "a"}, "count": 2}))).is_ok());
        assert!(validate("press", &step(json!({"press": "Enter"}))).is_ok());
        let extra = validate(
            "click",
            &step(json!({"click": {"name": "Ask"}, "text": "x"})),
        )
        .expect_err("extra");
        assert_eq!(
            extra,
            "unknown key `text` beside `click` (a `click` step takes click)"
        );
        let path = validate("open", &step(json!({"open": "http://elsewhere"}))).expect_err("path");
        assert!(path.contains("starts with `/`"), "{path}");
        let shot =
            validate("screenshot", &step(json!({"screenshot": "../x.png"}))).expect_err("name");
        assert!(shot.contains("ending in `.png`"), "{shot}");
        let key = validate("press", &step(json!({"press": "Enterr"}))).expect_err("key");
        assert!(key.contains("`Enterr` is not one"), "{key}");
        let count =
            validate("see", &step(json!({"see": {"test": "a"}, "count": "2"}))).expect_err("count");
        assert_eq!(count, "`count` is a whole number");
        assert!(validate("fill", &step(json!({"fill": {"label": "Q"}}))).is_err());
    }

    #[test]
    fn test_ids_are_quoted_for_css() {
        assert_eq!(css_string(r#"a"b\c"#), r#"a\"b\\c"#);
    }
}
