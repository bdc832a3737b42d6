//! The media bucket (`[proof] media`), through the `object_store` crate: `s3://bucket/prefix` (AWS
//! credentials from the environment; `AWS_ENDPOINT_URL` for R2 and other S3-compatible stores), `r2://`
//! (S3 at the Cloudflare account's endpoint), `gs://` (`GOOGLE_APPLICATION_CREDENTIALS`) and `az://` or
//! `azblob://` (`AZURE_STORAGE_ACCOUNT_NAME` and `AZURE_STORAGE_ACCOUNT_KEY`).
//!
//! Each media file goes to `<prefix>/<story>/<head>/<path>` and is checked by reading its size back; a
//! pack then says `"store": "bucket"` and `"object": "<scheme>://<bucket>/<key>"` — never before. For
//! S3-compatible stores the retention is a lifecycle rule on the prefix, merged into the bucket's own
//! configuration (every other rule kept); where that cannot be done, the rule to set by hand is given.

use std::sync::Arc;

use object_store::aws::{AmazonS3, AmazonS3Builder, AwsAuthorizer};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};

use crate::settings::Env;

/// The id of the lifecycle rule aayu keeps in an S3 bucket.
pub const RULE_ID: &str = "aayudha-media";

/// The kind of store a bucket URL names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    S3,
    R2,
    Gcs,
    Azure,
}

/// Why the bucket could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("`{url}` is not a bucket aayu knows: {why}")]
    Url { url: String, why: String },
    #[error("cannot open the bucket `{url}`: {message}")]
    Open { url: String, message: String },
    #[error("{what} `{url}` failed: {message}")]
    Store {
        what: String,
        url: String,
        message: String,
    },
    #[error(
        "the upload of `{url}` does not read back whole: {expected} bytes sent, {found} stored"
    )]
    Size {
        url: String,
        expected: u64,
        found: u64,
    },
}

impl BucketError {
    /// How to fix it.
    pub fn hint(&self) -> Option<String> {
        let text = self.to_string();
        if matches!(self, BucketError::Url { .. }) {
            return Some("write `[proof] media` as s3://bucket/prefix, r2://bucket/prefix, gs://bucket/prefix or az://container/prefix".into());
        }
        // The service's own code first: a message also carries timings and request ids, in which a
        // bare `403` or `404` can appear by chance (`in 240.494033ms`).
        if text.contains("NoSuchBucket") {
            return Some("create the bucket first, or correct `[proof] media`".into());
        }
        let refused = [
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
            "AccessDenied",
            "403 Forbidden",
            "credential",
            "privileges",
        ];
        if refused.iter().any(|r| text.contains(r)) {
            return Some("check the bucket's credential in the environment (docs/ledger.md#media-buckets names each variable)".into());
        }
        if text.contains("404 Not Found") || text.contains("Not Found") {
            return Some("create the bucket first, or correct `[proof] media`".into());
        }
        None
    }
}

/// Where the bucket's S3 API is, for the requests `object_store` does not make (the lifecycle).
struct S3Api {
    store: Arc<AmazonS3>,
    /// `https://s3.<region>.amazonaws.com`, or the custom endpoint.
    endpoint: String,
    region: String,
}

/// An opened bucket.
pub struct Bucket {
    /// As configured (`s3://media/aayudha`).
    pub url: String,
    pub scheme: Scheme,
    pub bucket: String,
    /// The key prefix, without slashes at either end (`aayudha` when the URL gives none).
    pub prefix: String,
    store: Arc<dyn ObjectStore>,
    s3: Option<S3Api>,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bucket")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// The prefix when `[proof] media` names only a bucket.
pub const DEFAULT_PREFIX: &str = "aayudha";

/// `scheme://bucket/prefix` split, checked.
pub fn parse(url: &str) -> Result<(Scheme, String, String), BucketError> {
    let bad = |why: &str| BucketError::Url {
        url: url.to_string(),
        why: why.to_string(),
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("it has no scheme"))?;
    let scheme = match scheme {
        "s3" => Scheme::S3,
        "r2" => Scheme::R2,
        "gs" => Scheme::Gcs,
        "az" | "azblob" => Scheme::Azure,
        other => {
            return Err(bad(&format!(
                "the scheme `{other}` is not s3, r2, gs, az or azblob"
            )));
        }
    };
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty()
        || !bucket
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Err(bad("the bucket name is empty or not a bucket name"));
    }
    let prefix = prefix.trim_matches('/');
    if prefix.split('/').any(|p| p == ".." || p == ".") {
        return Err(bad("the prefix has `.` or `..`"));
    }
    let prefix = if prefix.is_empty() {
        DEFAULT_PREFIX.to_string()
    } else {
        prefix.to_string()
    };
    Ok((scheme, bucket.to_string(), prefix))
}

impl Bucket {
    /// Opens `[proof] media` with the credentials of the environment.
    pub fn open(url: &str, env: &Env) -> Result<Bucket, BucketError> {
        let (scheme, bucket, prefix) = parse(url)?;
        let open = |message: String| BucketError::Open {
            url: url.to_string(),
            message,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| open(e.to_string()))?;
        let (store, s3): (Arc<dyn ObjectStore>, Option<S3Api>) = match scheme {
            Scheme::S3 | Scheme::R2 => {
                let endpoint = env
                    .var("AWS_ENDPOINT_URL")
                    .or_else(|| env.var("AWS_ENDPOINT"))
                    .or_else(|| {
                        (scheme == Scheme::R2).then(|| {
                            env.var("R2_ACCOUNT_ID")
                                .or_else(|| env.var("CLOUDFLARE_ACCOUNT_ID"))
                                .map(|a| format!("https://{a}.r2.cloudflarestorage.com"))
                        })?
                    });
                if scheme == Scheme::R2 && endpoint.is_none() {
                    return Err(open(
                        "r2:// needs the account's endpoint: set AWS_ENDPOINT_URL (https://<account>.r2.cloudflarestorage.com) or R2_ACCOUNT_ID".into(),
                    ));
                }
                let region = env
                    .var("AWS_REGION")
                    .or_else(|| env.var("AWS_DEFAULT_REGION"))
                    .unwrap_or_else(|| {
                        if scheme == Scheme::R2 {
                            "auto".into()
                        } else {
                            "us-east-1".into()
                        }
                    });
                let mut builder = AmazonS3Builder::from_env()
                    .with_bucket_name(&bucket)
                    .with_region(&region);
                if let Some(endpoint) = &endpoint {
                    builder = builder
                        .with_endpoint(endpoint)
                        .with_allow_http(endpoint.starts_with("http://"));
                }
                let store = Arc::new(builder.build().map_err(|e| open(e.to_string()))?);
                let api = S3Api {
                    store: store.clone(),
                    endpoint: endpoint
                        .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"))
                        .trim_end_matches('/')
                        .to_string(),
                    region,
                };
                (store, Some(api))
            }
            Scheme::Gcs => (
                Arc::new(
                    GoogleCloudStorageBuilder::from_env()
                        .with_bucket_name(&bucket)
                        .build()
                        .map_err(|e| open(e.to_string()))?,
                ),
                None,
            ),
            Scheme::Azure => (
                Arc::new(
                    MicrosoftAzureBuilder::from_env()
                        .with_container_name(&bucket)
                        .build()
                        .map_err(|e| open(e.to_string()))?,
                ),
                None,
            ),
        };
        Ok(Bucket {
            url: url.to_string(),
            scheme,
            bucket,
            prefix,
            store,
            s3,
            runtime,
        })
    }

    /// Opens the bucket an artifact's `object` names (`s3://media/aayudha/12/<head>/x.png`), with the key.
    pub fn open_object(object: &str, env: &Env) -> Result<(Bucket, String), BucketError> {
        let (scheme, bucket, key) = parse(object)?;
        let scheme_text = object.split("://").next().unwrap_or_default();
        let opened = Bucket::open(&format!("{scheme_text}://{bucket}"), env)?;
        debug_assert_eq!(opened.scheme, scheme);
        Ok((opened, key))
    }

    /// The key of a media file: `<prefix>/<story>/<head>/<path>`.
    pub fn key(&self, story: u64, head: &str, path: &str) -> String {
        format!("{}/{story}/{head}/{path}", self.prefix)
    }

    /// What a pack's `object` says: `<scheme>://<bucket>/<key>`.
    pub fn object_url(&self, key: &str) -> String {
        let scheme = self.url.split("://").next().unwrap_or("s3");
        format!("{scheme}://{}/{key}", self.bucket)
    }

    /// Uploads `bytes` to `key` and reads its size back.
    pub fn upload(&self, key: &str, bytes: &[u8]) -> Result<(), BucketError> {
        let location = Key::from(key);
        let url = self.object_url(key);
        let store = |what: &str, e: object_store::Error| BucketError::Store {
            what: what.to_string(),
            url: url.clone(),
            message: e.to_string(),
        };
        self.runtime
            .block_on(self.store.put(&location, PutPayload::from(bytes.to_vec())))
            .map_err(|e| store("the upload of", e))?;
        let meta = self
            .runtime
            .block_on(self.store.head(&location))
            .map_err(|e| store("reading back", e))?;
        if meta.size != bytes.len() as u64 {
            return Err(BucketError::Size {
                url,
                expected: bytes.len() as u64,
                found: meta.size,
            });
        }
        Ok(())
    }

    /// The bytes at `key`.
    pub fn read(&self, key: &str) -> Result<Vec<u8>, BucketError> {
        let location = Key::from(key);
        self.runtime
            .block_on(async {
                let got = self.store.get(&location).await?;
                got.bytes().await
            })
            .map(|b| b.to_vec())
            .map_err(|e| BucketError::Store {
                what: "reading".into(),
                url: self.object_url(key),
                message: e.to_string(),
            })
    }

    /// Sets the retention: for an S3-compatible store, the lifecycle rule [`RULE_ID`] that expires the
    /// prefix after `days`, merged into the bucket's configuration (every other rule kept); for GCS and
    /// Azure, or when the credential may not, [`Retention::ByHand`] with the rule to set.
    pub fn retention(&self, days: u32) -> Retention {
        let Some(s3) = &self.s3 else {
            return Retention::ByHand {
                why: match self.scheme {
                    Scheme::Gcs => "aayu sets lifecycle rules on S3-compatible buckets only; on Google Cloud Storage set this one yourself".into(),
                    _ => "aayu sets lifecycle rules on S3-compatible buckets only; on Azure Blob Storage set this lifecycle management policy yourself".into(),
                },
                rule: self.manual_rule(days),
            };
        };
        match self
            .runtime
            .block_on(merge_lifecycle(s3, &self.bucket, &self.prefix, days))
        {
            Ok(outcome) => outcome,
            Err(why) => Retention::ByHand {
                why: why.to_string(),
                rule: self.manual_rule(days),
            },
        }
    }

    /// The rule to set by hand, in the store's own terms.
    pub fn manual_rule(&self, days: u32) -> String {
        let prefix = format!("{}/", self.prefix);
        match self.scheme {
            Scheme::S3 | Scheme::R2 => lifecycle_rule(&prefix, days),
            Scheme::Gcs => format!(
                r#"{{"rule": [{{"action": {{"type": "Delete"}}, "condition": {{"age": {days}, "matchesPrefix": ["{prefix}"]}}}}]}}"#
            ),
            Scheme::Azure => format!(
                r#"{{"rules": [{{"name": "{RULE_ID}", "enabled": true, "type": "Lifecycle", "definition": {{"filters": {{"blobTypes": ["blockBlob"], "prefixMatch": ["{}/{prefix}"]}}, "actions": {{"baseBlob": {{"delete": {{"daysAfterModificationGreaterThan": {days}}}}}}}}}}}]}}"#,
                self.bucket
            ),
        }
    }
}

/// What setting the retention did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retention {
    /// The rule is in the bucket's lifecycle configuration now; `kept` other rules were kept.
    Set { kept: usize },
    /// It was there already, as it should be.
    Unchanged,
    /// Not set: why, and the rule to set by hand.
    ByHand { why: String, rule: String },
}

/// One S3 lifecycle rule: expire the objects under `prefix` after `days`.
fn lifecycle_rule(prefix: &str, days: u32) -> String {
    format!(
        "<Rule><ID>{RULE_ID}</ID><Filter><Prefix>{}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>{days}</Days></Expiration></Rule>",
        xml_escape(prefix)
    )
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The `<Rule>…</Rule>` elements of a lifecycle configuration, as written.
fn rules(xml: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<Rule>") {
        let Some(len) = rest[start..].find("</Rule>") else {
            break;
        };
        let end = start + len + "</Rule>".len();
        found.push(&rest[start..end]);
        rest = &rest[end..];
    }
    found
}

/// The configuration with aayu's rule in place of any earlier one of its id, every other rule kept.
pub fn merged_configuration(existing: Option<&str>, prefix: &str, days: u32) -> (String, usize) {
    let ours = lifecycle_rule(prefix, days);
    let others: Vec<&str> = existing
        .map(rules)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !r.contains(&format!("<ID>{RULE_ID}</ID>")))
        .collect();
    let kept = others.len();
    let mut xml =
        String::from(r#"<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">"#);
    for rule in others {
        xml.push_str(rule);
    }
    xml.push_str(&ours);
    xml.push_str("</LifecycleConfiguration>");
    (xml, kept)
}

/// Why aayu could not set its lifecycle rule: said in words, for [`Retention::ByHand`].
#[derive(Debug, thiserror::Error)]
enum LifecycleError {
    #[error("no credential to set the lifecycle rule with: {0}")]
    NoCredential(object_store::Error),
    #[error("{0}")]
    Request(http::Error),
    #[error("{0}")]
    Sign(object_store::Error),
    #[error("{0}")]
    Http(ureq::Error),
    #[error("cannot read the bucket's lifecycle configuration ({status}: {said})")]
    Read { status: u16, said: String },
    #[error("the credential may not set the bucket's lifecycle configuration ({status}: {said})")]
    Refused { status: u16, said: String },
}

/// GET the bucket's lifecycle configuration, merge aayu's rule in, PUT it back (signed with the store's
/// own credential).
async fn merge_lifecycle(
    s3: &S3Api,
    bucket: &str,
    prefix: &str,
    days: u32,
) -> Result<Retention, LifecycleError> {
    let credential = s3
        .store
        .credentials()
        .get_credential()
        .await
        .map_err(LifecycleError::NoCredential)?;
    let url = format!("{}/{bucket}?lifecycle", s3.endpoint);
    let send = |method: http::Method, body: Vec<u8>| {
        let credential = credential.clone();
        let url = url.clone();
        let region = s3.region.clone();
        async move {
            let mut request = http::Request::builder().method(method).uri(&url);
            if !body.is_empty() {
                use base64::Engine as _;
                use sha2::Digest as _;
                let sum =
                    base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(&body));
                request = request
                    .header("content-type", "application/xml")
                    .header("x-amz-sdk-checksum-algorithm", "SHA256")
                    .header("x-amz-checksum-sha256", sum);
            }
            let mut signed: object_store::client::HttpRequest = request
                .body(object_store::client::HttpRequestBody::from(body.clone()))
                .map_err(LifecycleError::Request)?;
            AwsAuthorizer::new(&credential, "s3", &region)
                .try_authorize(&mut signed, None)
                .map_err(LifecycleError::Sign)?;
            let (parts, _) = signed.into_parts();
            let plain = http::Request::from_parts(parts, body);
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            let mut answer = agent.run(plain).map_err(LifecycleError::Http)?;
            let status = answer.status().as_u16();
            let text = answer
                .body_mut()
                .read_to_string()
                .map_err(LifecycleError::Http)?;
            Ok::<(u16, String), LifecycleError>((status, text))
        }
    };
    let (status, existing) = send(http::Method::GET, Vec::new()).await?;
    let existing = match status {
        200 => Some(existing),
        404 if existing.contains("NoSuchLifecycleConfiguration") => None,
        _ => {
            return Err(LifecycleError::Read {
                status,
                said: s3_error(&existing),
            });
        }
    };
    let prefix = format!("{prefix}/");
    let ours = lifecycle_rule(&prefix, days);
    if existing
        .as_deref()
        .is_some_and(|x| rules(x).contains(&ours.as_str()))
    {
        return Ok(Retention::Unchanged);
    }
    let (xml, kept) = merged_configuration(existing.as_deref(), &prefix, days);
    let (status, answer) = send(http::Method::PUT, xml.into_bytes()).await?;
    if status != 200 {
        return Err(LifecycleError::Refused {
            status,
            said: s3_error(&answer),
        });
    }
    Ok(Retention::Set { kept })
}

/// `Code: Message` of an S3 error document, or its first 200 characters.
fn s3_error(xml: &str) -> String {
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = xml.find(&open)? + open.len();
        let end = xml[start..].find(&format!("</{name}>"))? + start;
        Some(xml[start..end].to_string())
    };
    match (tag("Code"), tag("Message")) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code,
        _ => xml.chars().take(200).collect(),
    }
}

/// A `[proof] media` that is not a bucket URL is the user's to fix (exit 2); anything the store refused is
/// exit 1; both with the hint.
impl crate::failure::Diagnose for BucketError {
    fn status(&self) -> crate::exit::ExitStatus {
        match self {
            BucketError::Url { .. } => crate::exit::ExitStatus::Usage,
            _ => crate::exit::ExitStatus::Failure,
        }
    }

    fn hint(&self) -> Option<String> {
        BucketError::hint(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint follows the service's code, not a number that happens to be in a timing.
    #[test]
    fn a_missing_bucket_is_told_apart_from_a_refused_credential() {
        let store = |message: &str| BucketError::Store {
            what: "the upload of".into(),
            url: "s3://no-such-bucket/x".into(),
            message: message.into(),
        };
        let missing = store(
            "Error performing PUT http://127.0.0.1:43399/no-such-bucket/x in 240.494033ms - Server returned non-2xx status code: 404 Not Found: <Error><Code>NoSuchBucket</Code></Error>",
        );
        assert_eq!(
            missing.hint().as_deref(),
            Some("create the bucket first, or correct `[proof] media`")
        );
        let refused = store(
            "Server returned non-2xx status code: 403 Forbidden: <Error><Code>InvalidAccessKeyId</Code></Error>",
        );
        assert!(
            refused
                .hint()
                .is_some_and(|h| h.starts_with("check the bucket's credential"))
        );
    }

    #[test]
    fn bucket_urls_are_split_and_checked() {
        assert_eq!(
            parse("s3://media/proof/packs").expect("ok"),
            (Scheme::S3, "media".into(), "proof/packs".into())
        );
        assert_eq!(
            parse("r2://media").expect("ok"),
            (Scheme::R2, "media".into(), "aayudha".into())
        );
        assert_eq!(parse("azblob://c/p/").expect("ok").0, Scheme::Azure);
        assert_eq!(parse("gs://b/p").expect("ok").0, Scheme::Gcs);
        assert!(parse("ftp://b/p").is_err());
        assert!(parse("s3:///p").is_err());
        assert!(parse("s3://b/../p").is_err());
    }

    #[test]
    fn the_rule_is_merged_and_every_other_rule_kept() {
        let existing = r#"<?xml version="1.0"?><LifecycleConfiguration xmlns="x"><Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration></Rule><Rule><ID>aayudha-media</ID><Filter><Prefix>aayudha/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>90</Days></Expiration></Rule></LifecycleConfiguration>"#;
        let (xml, kept) = merged_configuration(Some(existing), "aayudha/", 30);
        assert_eq!(kept, 1);
        assert!(xml.contains("<ID>logs</ID>"), "{xml}");
        assert_eq!(xml.matches("<ID>aayudha-media</ID>").count(), 1, "{xml}");
        assert!(
            xml.contains("<Days>30</Days>") && !xml.contains("<Days>90</Days>"),
            "{xml}"
        );
        let (fresh, kept) = merged_configuration(None, "p/", 7);
        assert_eq!(kept, 0);
        assert_eq!(rules(&fresh).len(), 1);
    }
}
