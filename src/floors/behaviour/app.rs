//! The app that ui and api checks drive: refusing a production target before anything starts, starting
//! `[verify] seed` once per run and waiting until `base_url` answers.

use std::net::{IpAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The host of a URL (`http://[::1]:8080/x` → `::1`), lower-cased, or `None` when it is not a URL.
pub fn host_of(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let default_port = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default_port,
    };
    if host.is_empty() {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
}

/// Whether a host is this machine: `localhost` or a loopback address.
pub fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Why `[verify] base_url` is no target for behaviour checks (the configuration's to fix).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("`[verify] base_url` `{base_url}` is not an http(s) URL")]
    NotHttp { base_url: String },
    #[error(
        "`[verify] base_url` `{base_url}` is on `{host}`, which `[verify] production` lists: behaviour checks never run against production"
    )]
    Production { base_url: String, host: String },
    #[error(
        "`[verify] base_url` `{base_url}` is on `{host}`, which is neither loopback nor listed in `[verify] targets`: add it there if it is a test deployment"
    )]
    Unlisted { base_url: String, host: String },
}

/// Refuses a production target, or a non-loopback host that `[verify] targets` does not list.
pub fn check_target(
    base_url: &str,
    production: &[String],
    targets: &[String],
) -> Result<(), TargetError> {
    let base_url = base_url.to_string();
    let Some((host, _)) = host_of(&base_url) else {
        return Err(TargetError::NotHttp { base_url });
    };
    if production.iter().any(|p| p.eq_ignore_ascii_case(&host)) {
        return Err(TargetError::Production { base_url, host });
    }
    if !is_loopback(&host) && !targets.iter().any(|t| t.eq_ignore_ascii_case(&host)) {
        return Err(TargetError::Unlisted { base_url, host });
    }
    Ok(())
}

/// Waits until something accepts a connection at `base_url`, for at most `limit`.
pub fn wait_until_up(base_url: &str, limit: Duration) -> bool {
    let Some((host, port)) = host_of(base_url) else {
        return false;
    };
    let started = Instant::now();
    while started.elapsed() < limit {
        let addrs = (host.as_str(), port)
            .to_socket_addrs()
            .map(|a| a.collect::<Vec<_>>())
            .unwrap_or_default();
        if addrs
            .iter()
            .any(|a| TcpStream::connect_timeout(a, Duration::from_millis(300)).is_ok())
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(
            host_of("http://127.0.0.1:8080/x"),
            Some(("127.0.0.1".into(), 8080))
        );
        assert_eq!(
            host_of("https://App.Example.com/"),
            Some(("app.example.com".into(), 443))
        );
        assert_eq!(host_of("http://[::1]:3000"), Some(("::1".into(), 3000)));
        assert_eq!(
            host_of("http://user:pw@localhost"),
            Some(("localhost".into(), 80))
        );
        assert_eq!(host_of("ftp://x"), None);
        assert_eq!(host_of("localhost:80"), None);
    }

    #[test]
    fn production_and_unlisted_hosts_are_refused() {
        let prod = vec!["shop.example.com".to_string()];
        let targets = vec!["staging.example.com".to_string()];
        assert!(check_target("http://127.0.0.1:8080", &prod, &targets).is_ok());
        assert!(check_target("http://localhost:8080", &prod, &targets).is_ok());
        assert!(check_target("https://staging.example.com", &prod, &targets).is_ok());
        let err = check_target("https://SHOP.example.com/", &prod, &targets)
            .expect_err("production")
            .to_string();
        assert!(err.contains("`[verify] production` lists"), "{err}");
        let err = check_target("http://10.0.0.5", &prod, &targets)
            .expect_err("unlisted")
            .to_string();
        assert!(err.contains("neither loopback nor listed"), "{err}");
    }
}
