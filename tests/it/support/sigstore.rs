//! A Sigstore trust domain made in the test, at fixed past times, with fixed keys and deterministic
//! (RFC 6979) signatures: a Fulcio-like root CA, a leaf with the Fulcio extensions and an embedded SCT from
//! a test CT log, a Rekor-like log key, the `trusted_root.json` naming all three, and a bundle of the shape
//! `actions/attest` writes for a public repository (a DSSE envelope over an in-toto v1 statement, a `dsse`
//! v0.0.1 entry with its SET and an RFC 6962 inclusion proof under a signed-note checkpoint).
//!
//! Each knob of [`Options`] breaks one thing, so a test says which check refuses it.
//!
//! One file for two crates: the unit tests of `src/attest` include it by path, and the integration tests
//! sign the gate packs the fake GitHub serves with it; so it names nothing of either crate.

#![allow(dead_code)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use p256::ecdsa::{DerSignature, SigningKey, signature::Signer};
use p256::pkcs8::EncodePublicKey;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::str::FromStr;
use x509_cert::builder::{Builder, CertificateBuilder, Profile};
use x509_cert::der::asn1::{BitString, Ia5String, ObjectIdentifier, OctetString, Utf8StringRef};
use x509_cert::der::{Encode, EncodePem};
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectAltName};
use x509_cert::name::Name;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::SubjectPublicKeyInfoOwned;
use x509_cert::time::{Time, Validity};

/// 2024-01-01T00:00:00Z: the CA and the logs start here.
const T_ROOT: u64 = 1_704_067_200;
/// 2034-01-01T00:00:00Z: the CA ends here.
const T_ROOT_END: u64 = 2_019_686_400;
/// 2025-06-01T12:00:00Z: the leaf is valid for ten minutes from here.
const T_LEAF: u64 = 1_748_779_200;
/// 2025-06-01T12:01:00Z: the log integrated the entry.
pub const T_INTEGRATED: i64 = 1_748_779_260;

/// The digest of the gate's `pack.json` the good bundle signs.
pub const PACK_SHA256: &str = "5f1a8e2c00112233445566778899aabbccddeeff0123456789abcdef5f1a8e2c";

/// The repository of the good bundle: `https://github.com/acme/shop`, id 1001, owner id 2002, default
/// branch `main`, gate workflow `.github/workflows/aayudha.yml`, run 77.
pub const WORKFLOW: &str =
    "https://github.com/acme/shop/.github/workflows/aayudha.yml@refs/heads/main";

/// What the gate's own signature says in the hand-made repository `acme/shop`: the Fulcio extensions by
/// their last arc.
pub fn gate_claims() -> BTreeMap<u32, String> {
    [
        (8, "https://token.actions.githubusercontent.com"),
        (9, WORKFLOW),
        (10, "0123456789abcdef0123456789abcdef01234567"),
        (11, "github-hosted"),
        (12, "https://github.com/acme/shop"),
        (13, "0123456789abcdef0123456789abcdef01234567"),
        (14, "refs/heads/main"),
        (15, "1001"),
        (16, "https://github.com/acme"),
        (17, "2002"),
        (18, WORKFLOW),
        (19, "89abcdef0123456789abcdef0123456789abcdef"),
        (20, "pull_request_target"),
        (
            21,
            "https://github.com/acme/shop/actions/runs/77/attempts/1",
        ),
        (22, "public"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_string()))
    .collect()
}

/// The gate's own signature in another repository: `repo` on `server` (such as `https://github.com`), its
/// ids, the gate workflow's path on `branch` (the default branch), run `run` attempt `attempt`, signing
/// `pack_sha256`. Every other claim is [`gate_claims`]'.
pub struct Gate<'a> {
    pub server: &'a str,
    pub repo: &'a str,
    pub repository_id: u64,
    pub owner_id: u64,
    pub workflow_path: &'a str,
    pub branch: &'a str,
    pub run: u64,
    pub attempt: u64,
    pub pack_sha256: &'a str,
}

impl Gate<'_> {
    /// The options of this gate's good bundle.
    pub fn options(&self) -> Options {
        let repo_uri = format!("{}/{}", self.server, self.repo);
        let workflow = format!(
            "{repo_uri}/{}@refs/heads/{}",
            self.workflow_path, self.branch
        );
        let owner = self.repo.split('/').next().unwrap_or_default();
        let mut o = Options::good();
        for (arc, value) in [
            (9, workflow.clone()),
            (12, repo_uri.clone()),
            (14, format!("refs/heads/{}", self.branch)),
            (15, self.repository_id.to_string()),
            (16, format!("{}/{owner}", self.server)),
            (17, self.owner_id.to_string()),
            (18, workflow.clone()),
            (
                21,
                format!(
                    "{repo_uri}/actions/runs/{}/attempts/{}",
                    self.run, self.attempt
                ),
            ),
        ] {
            o.claims.insert(arc, value);
        }
        o.san = workflow;
        o.subject_sha256 = self.pack_sha256.to_string();
        o
    }
}

/// What the test bundle is made of; [`Options::good`] is the gate's own signature.
#[derive(Clone)]
pub struct Options {
    pub claims: BTreeMap<u32, String>,
    pub san: String,
    pub subject_sha256: String,
    pub predicate_type: String,
    /// Embed an SCT in the leaf.
    pub sct: bool,
    /// Sign the leaf with a CA the trusted root does not name.
    pub foreign_ca: bool,
    /// The organisation of the CA (`GitHub, Inc.` is the private instance).
    pub ca_org: String,
    /// Give the entry a SET.
    pub set: bool,
    /// Sign the SET over `integratedTime + set_time_shift`.
    pub set_time_shift: i64,
}

impl Options {
    pub fn good() -> Options {
        let claims = gate_claims();
        Options {
            claims,
            san: WORKFLOW.to_string(),
            subject_sha256: PACK_SHA256.to_string(),
            predicate_type: "https://slsa.dev/provenance/v1".to_string(),
            sct: true,
            foreign_ca: false,
            ca_org: "aayudha.test".to_string(),
            set: true,
            set_time_shift: 0,
        }
    }

    /// The good options with some claims replaced.
    pub fn with_claims(changes: &[(u32, &str)]) -> Options {
        let mut o = Options::good();
        for (arc, value) in changes {
            o.claims.insert(*arc, (*value).to_string());
        }
        o
    }
}

/// A P-256 key from a fixed scalar.
fn key(byte: u8) -> SigningKey {
    SigningKey::from_bytes(&[byte; 32].into()).expect("a valid scalar")
}

fn spki_der(key: &SigningKey) -> Vec<u8> {
    key.verifying_key()
        .to_public_key_der()
        .expect("encode the key")
        .into_vec()
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn sign(key: &SigningKey, message: &[u8]) -> Vec<u8> {
    let signature: DerSignature = key.sign(message);
    signature.as_bytes().to_vec()
}

fn time(seconds: u64) -> Time {
    Time::UtcTime(
        x509_cert::der::asn1::UtcTime::from_unix_duration(std::time::Duration::from_secs(seconds))
            .expect("a UTC time"),
    )
}

/// The CA key, the CT key and the log key of the trusted root, and the CA key outside it.
fn ca_key(foreign: bool) -> SigningKey {
    key(if foreign { 0x12 } else { 0x11 })
}
fn leaf_key() -> SigningKey {
    key(0x21)
}
fn ct_key() -> SigningKey {
    key(0x31)
}
fn log_key() -> SigningKey {
    key(0x41)
}

/// The root CA certificate (self-signed).
fn ca_certificate(foreign: bool, org: &str) -> x509_cert::Certificate {
    let key = ca_key(foreign);
    let cn = if foreign { "elsewhere" } else { "test-fulcio" };
    let org = org.replace(',', "\\,");
    let subject = Name::from_str(&format!("CN={cn},O={org}")).expect("a name");
    let spki = SubjectPublicKeyInfoOwned::from_key(*key.verifying_key()).expect("spki");
    let validity = Validity {
        not_before: time(T_ROOT),
        not_after: time(T_ROOT_END),
    };
    CertificateBuilder::new(
        Profile::Root,
        SerialNumber::from(1u32),
        validity,
        subject,
        spki,
        &key,
    )
    .expect("a CA builder")
    .build::<DerSignature>()
    .expect("the CA certificate")
}

/// An extension holding `value` as a DER UTF8String, as Fulcio writes `.8` onwards.
fn fulcio_extension(arc: u32, value: &str) -> Extension {
    let oid = ObjectIdentifier::new(&format!("1.3.6.1.4.1.57264.1.{arc}")).expect("an oid");
    let der = Utf8StringRef::new(value)
        .expect("utf8")
        .to_der()
        .expect("der");
    Extension {
        extn_id: oid,
        critical: false,
        extn_value: OctetString::new(der).expect("octets"),
    }
}

/// The leaf: EKU codeSigning, KU digitalSignature, a URI SAN, the Fulcio extensions of `o`, and (when
/// `o.sct`) an SCT over the precertificate — the TBS without the SCT extension — signed by the CT key.
fn leaf_certificate(o: &Options, ca: &x509_cert::Certificate) -> x509_cert::Certificate {
    let issuer_key = ca_key(o.foreign_ca);
    let spki = SubjectPublicKeyInfoOwned::from_key(*leaf_key().verifying_key()).expect("spki");
    let validity = Validity {
        not_before: time(T_LEAF),
        not_after: time(T_LEAF + 600),
    };
    let profile = Profile::Leaf {
        issuer: ca.tbs_certificate.subject.clone(),
        enable_key_agreement: false,
        enable_key_encipherment: false,
    };
    let mut builder = CertificateBuilder::new(
        profile,
        SerialNumber::from(2u32),
        validity,
        Name::default(),
        spki,
        &issuer_key,
    )
    .expect("a leaf builder");
    let uri = Ia5String::new(&o.san).expect("an IA5 URI");
    builder
        .add_extension(&SubjectAltName(vec![
            GeneralName::UniformResourceIdentifier(uri),
        ]))
        .expect("SAN");
    builder
        .add_extension(&ExtendedKeyUsage(vec![
            x509_cert::der::oid::db::rfc5280::ID_KP_CODE_SIGNING,
        ]))
        .expect("EKU");
    let built = builder.build::<DerSignature>().expect("the leaf");
    let mut tbs = built.tbs_certificate.clone();
    let extensions = tbs.extensions.get_or_insert_with(Vec::new);
    for (arc, value) in &o.claims {
        extensions.push(fulcio_extension(*arc, value));
    }
    if o.sct {
        let precert = tbs.to_der().expect("precert tbs");
        let issuer_spki = ca
            .tbs_certificate
            .subject_public_key_info
            .to_der()
            .expect("spki");
        let sct = sct_list(&precert, &issuer_spki);
        let inner = OctetString::new(sct)
            .expect("octets")
            .to_der()
            .expect("der");
        if let Some(extensions) = tbs.extensions.as_mut() {
            extensions.push(Extension {
                extn_id: x509_cert::der::oid::db::rfc6962::CT_PRECERT_SCTS,
                critical: false,
                extn_value: OctetString::new(inner).expect("octets"),
            });
        }
    }
    let tbs_der = tbs.to_der().expect("tbs");
    let signature = BitString::from_bytes(&sign(&issuer_key, &tbs_der)).expect("bits");
    x509_cert::Certificate {
        tbs_certificate: tbs,
        signature_algorithm: built.signature_algorithm,
        signature,
    }
}

/// An RFC 6962 `SignedCertificateTimestampList` with one v1 SCT over the precert entry.
fn sct_list(precert_tbs: &[u8], issuer_spki: &[u8]) -> Vec<u8> {
    let timestamp_ms = T_LEAF * 1000;
    let log_id = sha256(&spki_der(&ct_key()));
    // digitally-signed struct: version, signature_type certificate_timestamp, timestamp, entry_type
    // precert_entry, issuer_key_hash, tbs_certificate<1..2^24-1>, extensions<0..2^16-1>.
    let mut signed = vec![0u8, 0u8];
    signed.extend_from_slice(&timestamp_ms.to_be_bytes());
    signed.extend_from_slice(&1u16.to_be_bytes());
    signed.extend_from_slice(&sha256(issuer_spki));
    let len = u32::try_from(precert_tbs.len())
        .expect("small")
        .to_be_bytes();
    signed.extend_from_slice(&len[1..]);
    signed.extend_from_slice(precert_tbs);
    signed.extend_from_slice(&0u16.to_be_bytes());
    let signature = sign(&ct_key(), &signed);
    let mut sct = vec![0u8];
    sct.extend_from_slice(&log_id);
    sct.extend_from_slice(&timestamp_ms.to_be_bytes());
    sct.extend_from_slice(&0u16.to_be_bytes());
    sct.extend_from_slice(&[4, 3]); // sha256, ecdsa
    sct.extend_from_slice(&u16::try_from(signature.len()).expect("small").to_be_bytes());
    sct.extend_from_slice(&signature);
    let mut list = (u16::try_from(sct.len() + 2).expect("small"))
        .to_be_bytes()
        .to_vec();
    list.extend_from_slice(&u16::try_from(sct.len()).expect("small").to_be_bytes());
    list.extend_from_slice(&sct);
    list
}

/// RFC 6962 hashes.
fn leaf_hash(data: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}
fn node_hash(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}
fn tree_hash(leaves: &[[u8; 32]]) -> [u8; 32] {
    if leaves.len() == 1 {
        return leaves[0];
    }
    let k = split(leaves.len());
    node_hash(&tree_hash(&leaves[..k]), &tree_hash(&leaves[k..]))
}
fn audit_path(m: usize, leaves: &[[u8; 32]]) -> Vec<[u8; 32]> {
    if leaves.len() == 1 {
        return Vec::new();
    }
    let k = split(leaves.len());
    if m < k {
        let mut path = audit_path(m, &leaves[..k]);
        path.push(tree_hash(&leaves[k..]));
        path
    } else {
        let mut path = audit_path(m - k, &leaves[k..]);
        path.push(tree_hash(&leaves[..k]));
        path
    }
}

fn pem(cert: &x509_cert::Certificate) -> String {
    cert.to_pem(x509_cert::der::pem::LineEnding::LF)
        .expect("pem")
}

fn key_json(key: &SigningKey) -> serde_json::Value {
    serde_json::json!({
        "rawBytes": B64.encode(spki_der(key)),
        "keyDetails": "PKIX_ECDSA_P256_SHA_256",
        "validFor": {"start": "2024-01-01T00:00:00Z"},
    })
}

/// The trusted root naming the test CA, the CT log and the Rekor log, on one line (as `gh attestation
/// trusted-root` prints it).
pub fn trusted_root_json() -> String {
    let ca = ca_certificate(false, "aayudha.test");
    let log_id = |k: &SigningKey| B64.encode(sha256(&spki_der(k)));
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [{
            "baseUrl": "https://rekor.test",
            "hashAlgorithm": "SHA2_256",
            "publicKey": key_json(&log_key()),
            "logId": {"keyId": log_id(&log_key())},
        }],
        "certificateAuthorities": [{
            "subject": {"organization": "aayudha.test", "commonName": "test-fulcio"},
            "uri": "https://fulcio.test",
            "certChain": {"certificates": [{"rawBytes": B64.encode(ca.to_der().expect("der"))}]},
            "validFor": {"start": "2024-01-01T00:00:00Z"},
        }],
        "ctlogs": [{
            "baseUrl": "https://ctfe.test",
            "hashAlgorithm": "SHA2_256",
            "publicKey": key_json(&ct_key()),
            "logId": {"keyId": log_id(&ct_key())},
        }],
        "timestampAuthorities": [],
    })
    .to_string()
}

/// The bundle `o` describes, as JSON bytes.
pub fn bundle(o: &Options) -> Vec<u8> {
    let ca = ca_certificate(o.foreign_ca, &o.ca_org);
    let leaf = leaf_certificate(o, &ca);
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "pack.json", "digest": {"sha256": o.subject_sha256}}],
        "predicateType": o.predicate_type,
        "predicate": {
            "buildDefinition": {"buildType": "https://actions.github.io/buildtypes/workflow/v1"},
            "runDetails": {"builder": {"id": o.san}},
        },
    })
    .to_string();
    let payload_type = "application/vnd.in-toto+json";
    let pae = format!(
        "DSSEv1 {} {payload_type} {} {statement}",
        payload_type.len(),
        statement.len()
    );
    let dsse_sig = sign(&leaf_key(), pae.as_bytes());
    let envelope = serde_json::json!({
        "payload": B64.encode(&statement),
        "payloadType": payload_type,
        "signatures": [{"sig": B64.encode(&dsse_sig)}],
    });
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    // The `dsse` v0.0.1 entry, keys in RFC 8785 order as Rekor canonicalises it.
    let body = format!(
        r#"{{"apiVersion":"0.0.1","kind":"dsse","spec":{{"envelopeHash":{{"algorithm":"sha256","value":"{}"}},"payloadHash":{{"algorithm":"sha256","value":"{}"}},"signatures":[{{"signature":"{}","verifier":"{}"}}]}}}}"#,
        hex(&sha256(envelope.to_string().as_bytes())),
        hex(&sha256(statement.as_bytes())),
        B64.encode(&dsse_sig),
        B64.encode(pem(&leaf)),
    );
    let log_id = sha256(&spki_der(&log_key()));
    let log_index: usize = 3;
    let set_payload = format!(
        r#"{{"body":"{}","integratedTime":{},"logID":"{}","logIndex":{log_index}}}"#,
        B64.encode(&body),
        T_INTEGRATED + o.set_time_shift,
        hex(&log_id),
    );
    let set = sign(&log_key(), set_payload.as_bytes());
    // A log of five entries, ours the fourth.
    let mut leaves: Vec<[u8; 32]> = (0u8..5).map(|i| leaf_hash(&[i; 8])).collect();
    leaves[log_index] = leaf_hash(body.as_bytes());
    let root = tree_hash(&leaves);
    let origin = "rekor.test - 1234";
    let note = format!("{origin}\n{}\n{}\n", leaves.len(), B64.encode(root));
    let mut hint_and_sig = log_id[..4].to_vec();
    hint_and_sig.extend_from_slice(&sign(&log_key(), note.as_bytes()));
    // The signature line names the log without the tree id (a name is one word).
    let checkpoint = format!("{note}\n\u{2014} rekor.test {}\n", B64.encode(hint_and_sig));
    let mut entry = serde_json::json!({
        "logIndex": log_index.to_string(),
        "logId": {"keyId": B64.encode(log_id)},
        "kindVersion": {"kind": "dsse", "version": "0.0.1"},
        "integratedTime": T_INTEGRATED.to_string(),
        "inclusionProof": {
            "logIndex": log_index.to_string(),
            "rootHash": B64.encode(root),
            "treeSize": leaves.len().to_string(),
            "hashes": audit_path(log_index, &leaves).iter().map(|h| B64.encode(h)).collect::<Vec<_>>(),
            "checkpoint": {"envelope": checkpoint},
        },
        "canonicalizedBody": B64.encode(&body),
    });
    if o.set {
        entry["inclusionPromise"] = serde_json::json!({"signedEntryTimestamp": B64.encode(set)});
    }
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "verificationMaterial": {
            "certificate": {"rawBytes": B64.encode(leaf.to_der().expect("der"))},
            "tlogEntries": [entry],
            "timestampVerificationData": {},
        },
        "dsseEnvelope": envelope,
    })
    .to_string()
    .into_bytes()
}
