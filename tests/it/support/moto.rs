//! A local S3-compatible server for the media tests: `moto_server` (PyPI `moto[server]`, which scripts/test
//! installs in its venv) on loopback, stopped when dropped. With `auth`, moto checks every request's
//! credential after its first `free` actions, which the test spends on making the bucket and an IAM user.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    child: Child,
    pub url: String,
}

/// Where moto_server is: the venv scripts/test made. Missing, the test fails with the line that installs
/// it (`AAYU_SKIP_MOTO=1` skips, said on stderr).
pub fn program() -> Option<PathBuf> {
    let found = std::env::var_os("AAYUDHA_LINT_VENV")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/var/tmp/aayudha-lint")])
        .chain(std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/aayudha-lint")))
        .map(|v| v.join("bin/moto_server"))
        .find(|p| p.is_file());
    if found.is_some() {
        return found;
    }
    if std::env::var("AAYU_SKIP_MOTO").as_deref() == Ok("1") {
        eprintln!("skipped: moto_server is not installed and AAYU_SKIP_MOTO=1");
        return None;
    }
    panic!(
        "moto_server is not installed: run scripts/test once (it installs `moto[server]` in its venv), or set AAYU_SKIP_MOTO=1"
    );
}

impl Moto {
    /// Starts moto; `free_actions`: `None` for no authentication, `Some(n)` to check credentials after n
    /// actions.
    pub fn start(program: &std::path::Path, free_actions: Option<u32>) -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut cmd = Command::new(program);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(n) = free_actions {
            cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", n.to_string());
        }
        let child = cmd.spawn().expect("moto_server starts");
        let url = format!("http://127.0.0.1:{port}");
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "moto_server did not listen on {port} within 30 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Moto { child, url }
    }

    /// An unsigned request (moto takes it while it checks no credential, or as a free action).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let (status, bytes) = self.send(method, path, body, headers);
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// [`Moto::request`], the answer's bytes as they are.
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: &str,
        headers: &[(&str, &str)],
    ) -> (u16, Vec<u8>) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url));
        // Signed by nobody: moto reads the key to know the caller, and checks nothing while it does not
        // authenticate.
        if !headers.iter().any(|(k, _)| *k == "authorization") {
            request = request.header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIATEST/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0",
            );
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let mut answer = agent
            .run(request.body(body.as_bytes().to_vec()).expect("request"))
            .expect("moto answers");
        let status = answer.status().as_u16();
        let bytes = answer.body_mut().read_to_vec().unwrap_or_default();
        (status, bytes)
    }

    pub fn create_bucket(&self, bucket: &str) {
        let (status, text) = self.request("PUT", &format!("/{bucket}"), "", &[]);
        assert_eq!(status, 200, "{text}");
    }

    /// A free IAM action (moto routes it by the credential scope's service; the signature is not checked
    /// while actions are free).
    pub fn iam(&self, form: &str) -> String {
        let (status, text) = self.request(
            "POST",
            "/",
            form,
            &[
                ("content-type", "application/x-www-form-urlencoded"),
                (
                    "authorization",
                    "AWS4-HMAC-SHA256 Credential=AKIASETUP/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0",
                ),
            ],
        );
        assert_eq!(status, 200, "{text}");
        text
    }

    /// An IAM user allowed exactly `actions` (`s3:PutObject`, …) on every resource, and its access key.
    pub fn user(&self, name: &str, actions: &[&str]) -> (String, String) {
        self.iam(&format!(
            "Action=CreateUser&UserName={name}&Version=2010-05-08"
        ));
        let policy = serde_json::json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]});
        let encoded: String = policy
            .to_string()
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        self.iam(&format!(
            "Action=PutUserPolicy&UserName={name}&PolicyName=p&PolicyDocument={encoded}&Version=2010-05-08"
        ));
        let key = self.iam(&format!(
            "Action=CreateAccessKey&UserName={name}&Version=2010-05-08"
        ));
        let tag = |t: &str| {
            let start = key.find(&format!("<{t}>")).expect("tag") + t.len() + 2;
            let end = key[start..].find(&format!("</{t}>")).expect("end") + start;
            key[start..end].to_string()
        };
        (tag("AccessKeyId"), tag("SecretAccessKey"))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
